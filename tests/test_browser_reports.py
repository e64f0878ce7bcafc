"""The competitor map and the PDF reports in a real browser (issue 17), on a finished session.

(b) Verdict: the competitor table is sorted by clicking a column header (the order changes, by
    name, then reversed) and its CSV is downloaded (header and one row per competitor).
(c) Stories: both PDFs are downloaded, rendered to PNG with Poppler's ``pdftoppm`` and read
    with ``pdftotext`` for their headings (skipped with a reason without poppler-utils).

Replay provider (the Power of 8 recording, stages and verifiers), free localhost port, no
network; Debian's Chromium. Screenshots ``competitor-map-sorted`` and ``stories-reports`` land
in ``HAYTHAM_E2E_SHOTS`` when it names a folder.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest
from browser_helpers import BROWSER, CASSETTE, IDEA, Shots, browser_page, served, wait_until
from pipeline_helpers import replay_settings

from haytham.app import make_service
from haytham.stages import market_context

pytestmark = BROWSER
HEADER = [
    "id",
    "competitor",
    "job, for whom",
    "same job?",
    "pricing evidence",
    "pricing from",
    "switching cost",
    "gap we use",
    "cited by",
]
VALIDATION_HEADINGS = ["Validation report", "The idea", "Verdict", "Scorecard", "Competitors"]
SPEC_HEADINGS = ["Product specification", "MVP scope", "Capabilities", "Stories"]
COMPETITOR_COLUMN_X = 200  # inside the grid's second column ("competitor"), in its header row
HEADER_Y = 17


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list]:
    """A session run to the end (every gate auto-approved) and its competitors."""
    root = tmp_path_factory.mktemp("finished")
    with make_service(replay_settings(root, cassette=CASSETTE)) as svc:
        sid = svc.create_session(IDEA, session_id="p8")
        assert svc.run(sid, auto_approve=True).status == "done"
        competitors = svc.load_state(sid).outputs[market_context.SPEC.slug].payload.competitors
    assert len(competitors) >= 3
    return root, sid, competitors


def _column(page, n: int) -> list[str]:  # noqa: ANN001 — a playwright Page
    """The competitor grid's column ``n`` (1-based) as shown: glide-data-grid keeps the cells'
    text in an accessible table behind its canvas, in display order."""
    cells = page.get_by_test_id("stDataFrame").last.locator(f"td[aria-colindex='{n}']")
    return [cells.nth(i).inner_text() for i in range(cells.count())]


def test_the_competitor_map_sorts_by_a_clicked_column_and_downloads_as_csv(finished) -> None:
    from playwright.sync_api import expect

    root, sid, competitors = finished
    ids = [c.id for c in competitors]
    by_name = [c.id for c in sorted(competitors, key=lambda c: c.name)]
    assert by_name != ids  # sorting by name changes the order
    with served(root) as server, browser_page(root) as page:
        shot = Shots(page)
        page.goto(f"{server}/verdict?session={sid}")
        expect(page.get_by_role("heading", name="Competitor map")).to_be_visible()
        grid = page.get_by_test_id("stDataFrameResizable").last
        grid.scroll_into_view_if_needed()
        expect(grid.locator("td[aria-colindex='1']").first).to_have_text(ids[0])
        assert _column(page, 1) == ids

        header = {"x": COMPETITOR_COLUMN_X, "y": HEADER_Y}
        grid.click(position=header)
        expect(grid.locator("td[aria-colindex='1']").first).to_have_text(by_name[0])
        assert _column(page, 1) == by_name
        assert _column(page, 2) == sorted(c.name for c in competitors)
        shot("competitor-map-sorted")
        grid.click(position=header)  # again: descending
        expect(grid.locator("td[aria-colindex='1']").first).to_have_text(by_name[-1])
        assert _column(page, 1) == by_name[::-1]

        with page.expect_download() as got:
            page.get_by_role("button", name="Download the competitor map (CSV)").click()
        assert got.value.suggested_filename == f"{sid}-competitors.csv"
        rows = list(csv.reader(io.StringIO(Path(got.value.path()).read_text("utf-8"))))
    assert rows[0] == HEADER
    assert [r[0] for r in rows[1:]] == ids  # every competitor, in the map's own order
    assert [r[1] for r in rows[1:]] == [c.name for c in competitors]
    assert all(len(r) == len(HEADER) for r in rows)


def _pdftotext(pdf: Path) -> str:
    return subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(
    not (shutil.which("pdftotext") and shutil.which("pdftoppm")),
    reason="Debian's poppler-utils (pdftotext, pdftoppm) is not installed",
)
def test_both_pdf_reports_download_from_the_stories_page_and_render(
    finished, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    root, sid, _ = finished
    with served(root) as server, browser_page(root) as page:
        shot = Shots(page)
        page.goto(f"{server}/stories?session={sid}")
        expect(page.get_by_role("heading", name="Stories", exact=True)).to_be_visible()
        saved = {}
        for name, button in (
            ("validation", "Validation report (PDF)"),
            ("specification", "Full specification (PDF)"),
        ):
            # a click during a rerun hits a download the rerun has just replaced (the browser
            # then names the file by its media id): click once the script is idle
            expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=60_000)
            with page.expect_download() as got:
                page.get_by_role("button", name=button).click()
            assert got.value.suggested_filename == f"{sid}-{name}.pdf"
            saved[name] = tmp_path / f"{name}.pdf"
            got.value.save_as(saved[name])
        shot("stories-reports")
        # each click is on the decision record (issue 30: exports from the pages too); the
        # click's callback runs on the server, so wait for it
        with make_service(replay_settings(root, cassette=CASSETTE)) as svc:

            def downloads() -> set[str]:
                return {
                    str(d.detail.get("format"))
                    for d in svc.decisions(sid)
                    if d.detail.get("via") == "browser"
                }

            wait_until(lambda: {"validation-pdf", "pdf"} <= downloads(), timeout=60)

    for name, headings in (
        ("validation", VALIDATION_HEADINGS),
        ("specification", SPEC_HEADINGS),
    ):
        pdf = saved[name]
        assert pdf.read_bytes().startswith(b"%PDF")
        text = _pdftotext(pdf)
        at = [text.find(h) for h in headings]
        assert -1 not in at, (name, [h for h, i in zip(headings, at, strict=True) if i < 0])
        assert at == sorted(at), name  # in reading order
        out = tmp_path / name
        out.mkdir()
        subprocess.run(["pdftoppm", "-png", "-r", "40", str(pdf), str(out / "page")], check=True)
        pages = sorted(out.glob("page-*.png"))
        assert pages and all(p.stat().st_size > 2_000 for p in pages), name
    assert "MVP scope" not in _pdftotext(saved["validation"])  # the validation stops at WHY
