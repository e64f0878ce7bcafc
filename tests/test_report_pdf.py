"""PDF reports: the validation after Gate 1, the whole specification after Gate 4.

Checked the way a reader sees them: Poppler's ``pdftotext`` for the text and ``pdftoppm`` to
render pages to PNG (Debian's poppler-utils; skipped with a reason where it is missing).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import InputError
from haytham.reports.pdf import report

pytestmark = pytest.mark.skipif(
    not (shutil.which("pdftotext") and shutil.which("pdftoppm")),
    reason="Debian's poppler-utils (pdftotext, pdftoppm) is not installed",
)


def _in_order(text: str, headings: list[str]) -> list[int]:
    """Where each heading stands, each searched after the one before (a word such as
    "Competitors" may also head a column earlier on): -1 for one missing or out of order."""
    at, start = [], 0
    for heading in headings:
        found = text.find(heading, start)
        at.append(found)
        start = found + 1 if found >= 0 else start
    return at


SPEC_HEADINGS = [
    "Product specification",
    "The idea",
    "Verdict",
    "Scorecard",
    "Knockout criteria",
    "Concept anchor",
    "Market",
    "Competitors",
    "Risks",
    "MVP scope",
    "Capabilities",
    "System traits",
    "Build or buy",
    "Architecture decisions",
    "Stories",
    "Reviewer decisions",
]


def _text(pdf: Path) -> str:
    return subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout


def _pages_to_png(pdf: Path, out: Path) -> list[Path]:
    subprocess.run(["pdftoppm", "-png", "-r", "40", str(pdf), str(out / "page")], check=True)
    return sorted(out.glob("page-*.png"))


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("report")
    with make_service(replay_settings(tmp)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, auto_approve=True, until=4).gate == 4
        svc.rework(sid, "story-generation", "Put the consent note before the first circle.")
        assert svc.approve(sid, 4).status == "done"
    return tmp, sid


def test_the_specification_pdf_has_every_section_and_renders(finished, tmp_path, capsys) -> None:
    root, sid = finished
    out = tmp_path / "spec.pdf"
    assert (
        main(["export", sid, "--format", "pdf", "--output", str(out), *replay_cli_args(root)]) == 0
    )
    assert out.read_bytes().startswith(b"%PDF")
    text = _text(out)
    at = _in_order(text, SPEC_HEADINGS)
    assert -1 not in at, [h for h, i in zip(SPEC_HEADINGS, at, strict=True) if i < 0]
    assert "GO" in text and "STORY-001" in text and "auto-approve" in text
    assert "Put the consent note before the first circle." in text  # the reviewer's rework
    pages = _pages_to_png(out, tmp_path)
    assert len(pages) >= 4 and all(p.stat().st_size > 2_000 for p in pages)


def test_the_validation_pdf_comes_after_gate_1_and_the_spec_waits_for_the_stories(
    tmp_path, capsys
) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)  # stops at Gate 1
    out = tmp_path / "validation.pdf"
    opts = replay_cli_args(tmp_path)
    assert main(["export", sid, "--format", "validation-pdf", "--output", str(out), *opts]) == 0
    text = _text(out)
    assert "Validation report" in text and "Scorecard" in text and "Concept anchor" in text
    assert "MVP scope" not in text and "Stories" not in text
    assert "Gate 1" in text and "open" in text  # not yet approved, and it says so
    assert len(_pages_to_png(out, tmp_path)) >= 2
    capsys.readouterr()
    assert main(["export", sid, "--format", "pdf", "--output", str(tmp_path / "s.pdf"), *opts]) == 2
    err = capsys.readouterr().err
    assert "needs the stories" in err and "Traceback" not in err
    assert not (tmp_path / "s.pdf").exists()


def test_a_pdf_export_needs_a_file(finished, capsys) -> None:
    root, sid = finished
    assert main(["export", sid, "--format", "pdf", *replay_cli_args(root)]) == 2
    assert "--output FILE" in capsys.readouterr().err


def test_any_script_and_markup_in_the_idea_print_as_written(finished, tmp_path) -> None:
    root, sid = finished
    with make_service(replay_settings(root)) as svc:
        state = svc.load_state(sid)
    idea = "Ελληνικά, 日本語, 한국어 and café: <b>bold?</b> & <font color='red'>x</font> 5 < 6"
    written = state.model_copy(
        update={"idea": idea, "divergence": {"mvp-scope": {"idea": 0.61, "anchor": 0.72}}}
    )
    out = tmp_path / "unicode.pdf"
    out.write_bytes(report(written, "specification"))
    text = _text(out)
    assert "Ελληνικά, 日本語, 한국어 and café" in text
    assert "<b>bold?</b> & <font color='red'>x</font> 5 < 6" in text  # markup stays text
    assert "Fidelity to the idea" in text  # the chart, once there is a divergence curve


def test_nothing_to_report_before_the_validation_summary(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        state = svc.load_state(sid)
    with pytest.raises(InputError, match="nothing to report yet"):
        report(state, "validation")
    with pytest.raises(InputError, match="validation, specification"):
        report(state, "summary")


# one sentence per script; pdftotext must give each back as written
SCRIPTS = {
    "Latin": "This is a test sentence, café.",
    "Devanagari": "यह एक परीक्षण वाक्य है",
    "Bengali": "এটি একটি পরীক্ষা বাক্য",
    "Tamil": "இது ஒரு சோதனை வாக்கியம்",
    "Thai": "นี่คือประโยคทดสอบ",
    "Ethiopic": "ይህ የሙከራ ዓረፍተ ነገር ነው",
    "Chinese": "这是一个测试句子",
    "Korean": "이것은 테스트 문장입니다",
}
# right-to-left scripts: reportlab draws their letters in the order written, left to right and
# unjoined (no bidi, no shaping; docs/reliability.md), so pdftotext reads them back reversed
RTL = {"Arabic": "هذه جملة اختبار", "Hebrew": "זה משפט בדיקה"}


def test_a_sentence_in_each_script_comes_back_out_of_the_pdf(finished, tmp_path) -> None:
    root, sid = finished
    with make_service(replay_settings(root)) as svc:
        state = svc.load_state(sid)
    idea = "\n".join([*SCRIPTS.values(), *RTL.values()])
    out = tmp_path / "scripts.pdf"
    out.write_bytes(report(state.model_copy(update={"idea": idea}), "specification"))
    text = _text(out)
    missing = [script for script, sentence in SCRIPTS.items() if sentence not in text]
    assert not missing, missing
    for script, sentence in RTL.items():
        assert sentence[::-1] in text, script  # every letter drawn, none a box
    fonts = subprocess.run(["pdffonts", str(out)], capture_output=True, text=True).stdout
    assert "NotoSansDevanagari" in fonts and "NotoSansEthiopic" in fonts  # embedded, bundled


def test_an_item_of_5000_words_splits_across_pages(finished, tmp_path) -> None:
    from haytham.stages import mvp_scope, risk_assessment

    root, sid = finished
    with make_service(replay_settings(root)) as svc:
        state = svc.load_state(sid)
    words = " ".join(f"w{i}" for i in range(5000))
    outputs = dict(state.outputs)
    for spec, field in ((mvp_scope.SPEC, "in_scope"), (risk_assessment.SPEC, "risks")):
        out = outputs[spec.slug]
        payload = out.payload.model_dump()
        item = payload[field][0]
        for key, value in item.items():  # every text field of the first item
            if isinstance(value, str) and key != "id" and value not in ("low", "medium", "high"):
                item[key] = words
        outputs[spec.slug] = out.model_copy(
            update={"payload": type(out.payload).model_validate(payload)}
        )
    long = state.model_copy(update={"outputs": outputs, "idea": words})
    pdf = tmp_path / "long.pdf"
    pdf.write_bytes(report(long, "specification"))
    text = " ".join(_text(pdf).split())
    assert all(f"w{i}" in text for i in (0, 1234, 2500, 4999))
    assert len(_pages_to_png(pdf, tmp_path)) > 10
