"""A PDF to send an investor (issue 28): the idea's own title, table columns as wide as their
longest word (no word broken in the middle), a missing fidelity value drawn as a gap and named,
the change requests with the invariants they touch, a landscape page for a table too wide.

The finished Power of 8 run with one accepted change request (replay; the scripted change agent
of ``test_revise``); read with Poppler's ``pdftotext`` like a reader would."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pipeline_helpers import POWER8_IDEA, replay_settings
from test_revise import REQUEST, _change_cassette

from haytham.app import make_service
from haytham.reports.pdf import idea_title, report
from haytham.reports.pdf_columns import PADDING_PT, fit_widths

pytestmark = pytest.mark.skipif(
    not shutil.which("pdftotext"), reason="Debian's poppler-utils (pdftotext) is not installed"
)


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 — a SessionState
    tmp = tmp_path_factory.mktemp("investor")
    with make_service(replay_settings(tmp, cassette=_change_cassette(tmp))) as svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, auto_approve=True, until=2).gate == 2
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        svc.apply_change(sid, proposal)
        assert svc.run(sid, auto_approve=True).gate is None
        return svc.load_state(sid)


def _text(data: bytes, tmp: Path, *flags: str) -> str:
    pdf = tmp / "r.pdf"
    pdf.write_bytes(data)
    return subprocess.run(
        ["pdftotext", *flags, str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout


def _vocabulary(state) -> set[str]:  # noqa: ANN001
    words = re.findall(r"[A-Za-z]{4,}", json.dumps(state.dump(), ensure_ascii=False))
    return {w.lower() for w in words}


def test_the_title_is_the_ideas_own(changed, tmp_path: Path) -> None:  # noqa: ANN001
    text = _text(report(changed, "specification"), tmp_path)
    title = idea_title(changed.idea)
    assert title == "I'm a psychologist and I want an app for my existing patients"
    assert " ".join(text.split()).startswith(title)
    info = subprocess.run(
        ["pdfinfo", str(tmp_path / "r.pdf")], capture_output=True, text=True
    ).stdout
    assert f"{title} — Product specification" in " ".join(info.split())


def test_no_word_is_broken_across_a_cells_lines(changed, tmp_path: Path) -> None:  # noqa: ANN001
    vocabulary = _vocabulary(changed)
    for kind in ("validation", "specification"):
        lines = [ln.strip() for ln in _text(report(changed, kind), tmp_path, "-raw").splitlines()]
        broken = []
        for this, nxt in zip(lines, lines[1:], strict=False):
            if not this or not nxt:
                continue
            head, tail = this.split()[-1], nxt.split()[0]
            joined = (head + tail).lower()
            if (
                head.isalpha()
                and tail.isalpha()
                and joined in vocabulary
                and head.lower() not in vocabulary
                and tail.lower() not in vocabulary
            ):
                broken.append(f"{head}|{tail}")
        assert not broken, (kind, broken)


def test_the_change_requests_are_in_the_specification(changed, tmp_path: Path) -> None:  # noqa: ANN001
    text = " ".join(_text(report(changed, "specification"), tmp_path).split())
    assert "Change requests" in text
    assert "Stage 5 · MVP scope" in text and REQUEST[:30] in text
    assert "Invariants touched (code's check)" in text and "INV-1" in text
    assert "SCOPE-99" in text  # what changed: the item it added


def test_a_missing_fidelity_value_is_a_gap_and_said(changed, tmp_path: Path) -> None:  # noqa: ANN001
    scored = changed.model_copy(
        update={
            "divergence": {
                "idea-analysis": {"idea": 0.9},  # stage 1 runs before the anchor exists
                "mvp-scope": {"idea": 0.6, "anchor": 0.7},
            }
        }
    )
    text = " ".join(_text(report(scored, "specification"), tmp_path).split())
    assert "Not measured (no point drawn): stage 1 to the anchor." in text


def test_columns_fit_their_longest_word_and_too_wide_goes_landscape() -> None:
    def measure(word: str) -> float:
        return 5.0 * len(word)

    fitted = fit_widths(
        ["Id", "Confidence", "Note"],
        [["COMP-01"], ["medium"], ["a long note that can wrap at its spaces"]],
        [20.0, 20.0, 200.0],
        300.0,
        measure,
    )
    assert fitted.header == ["Id", "Conf.", "Note"]  # a header alone wider than its column
    assert fitted.widths[0] >= measure("COMP-01") + PADDING_PT
    assert fitted.widths[1] >= measure("medium") + PADDING_PT
    assert sum(fitted.widths) <= 300.0 + 1e-6 and not fitted.landscape
    wide = fit_widths(
        [f"c{n}" for n in range(7)],
        [["abcdefghijklmnop"]] * 7,
        [10.0] * 7,
        400.0,
        measure,
        landscape_available=700.0,
    )
    assert wide.landscape and sum(wide.widths) <= 700.0 + 1e-6
    assert min(wide.widths) >= measure("abcdefghijklmnop") + PADDING_PT
