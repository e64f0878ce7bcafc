"""Model text is data wherever it is shown: terminal, Markdown table, spreadsheet, export file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, replay_cli_args

from haytham.cli import main
from haytham.sanitize import FORMULA_LEADS, one_line, spreadsheet_cell, terminal_safe

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\\x9b31m\x00"


@pytest.mark.parametrize(
    "cell",
    ['=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)"]
    + ["\t=1+1", "\r=1+1", "  =1+1", "\x1b[31m=1"],
)
def test_a_formula_leading_cell_is_neutralised_and_stays_readable(cell: str) -> None:
    out = spreadsheet_cell(cell)
    assert isinstance(out, str) and out.startswith("'")
    assert out[1:].lstrip().lstrip("\n") == terminal_safe(cell).lstrip().lstrip("\n")


@pytest.mark.parametrize("cell", ["plain text", "a=b", "100", "", "email@example.com"])
def test_other_cells_are_unchanged(cell: str) -> None:
    assert spreadsheet_cell(cell) == cell
    assert spreadsheet_cell(42) == 42


def test_terminal_text_loses_escapes_and_controls_but_keeps_lines() -> None:
    text = terminal_safe(f"a{ESCAPES}b\r\nc\rd\te\x85f")
    assert text == "alinkb\nc\nd\tef"
    assert one_line("a\r\nb\rc\nd") == "a b c d"


@pytest.fixture()
def poisoned_session(tmp_path: Path) -> tuple[Path, list[str]]:
    """A finished replay session whose stories and TL;DR carry escapes, formulas and breaks."""
    lines = []
    for raw in (POWER8 / "full" / "pipeline.jsonl").read_text().splitlines():
        turn = json.loads(raw)
        for part in turn["response"]:
            body = part.get("input")
            if turn["agent"] == "idea-analysis" and body:
                body["tldr"] = ESCAPES + body["tldr"]
            if turn["agent"] == "story-generation" and body:
                for story, lead in zip(body["payload"]["stories"], "=+-@", strict=False):
                    story["title"] = f"{lead}cmd|x {story['title']}"
                    story["description"] = f"\r\n| cell |\r{story['description']}"
        lines.append(json.dumps(turn))
    cassette = tmp_path / "cassette"
    cassette.mkdir()
    (cassette / "pipeline.jsonl").write_text("\n".join(lines) + "\n")
    (cassette / "verify.jsonl").write_text((POWER8 / "full" / "verify.jsonl").read_text())
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    args = replay_cli_args(tmp_path, cassette)
    argv = ["run", "--idea-file", str(idea), "--session-id", "poison", "--auto-approve"]
    assert main([*argv, "--quiet", *args]) == 0
    return tmp_path, args


@pytest.mark.parametrize("fmt", ["csv", "jira", "linear"])
def test_spreadsheet_exports_neutralise_formulas(poisoned_session, capsys, fmt: str) -> None:
    _, args = poisoned_session
    capsys.readouterr()
    assert main(["export", "poison", "--format", fmt, *args]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c.lstrip(" ").startswith(FORMULA_LEADS)]
    assert any("=cmd|x" in c for c in cells)  # the text is kept, only made inert


def test_show_status_and_markdown_print_no_control_characters(poisoned_session, capsys) -> None:
    _, args = poisoned_session
    for argv in (
        ["show", "poison", "idea-analysis"],
        ["show", "poison", "story-generation"],
        ["status", "poison"],
        ["export", "poison", "--format", "markdown"],
    ):
        capsys.readouterr()
        assert main([*argv, *args]) == 0
        out = capsys.readouterr().out
        bad = {c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F}
        assert not bad, (argv, bad)
    # every table row of the stories keeps its columns: no line break inside a cell
    capsys.readouterr()
    main(["show", "poison", "story-generation", *args])
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    widths = {ln.replace("\\|", "").count("|") for ln in rows}
    assert rows and len(widths) <= 2  # the header row set and the claims table at most


@pytest.mark.parametrize(
    "where",
    ["folder", "missing", "unwritable", "too-long", "nul"],
)
def test_export_destination_errors_are_one_sentence(poisoned_session, capsys, where) -> None:
    tmp_path, args = poisoned_session
    target = {
        "folder": str(tmp_path),
        "missing": str(tmp_path / "no" / "such" / "out.csv"),
        "unwritable": "/proc/haytham-export.csv",
        "too-long": str(tmp_path / ("x" * 5000)),
        "nul": str(tmp_path / "a\x00b.csv"),
    }[where]
    capsys.readouterr()
    code = main(["export", "poison", "--format", "csv", "--output", target, *args])
    err = capsys.readouterr().err
    assert code in (1, 2) and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1
    assert not list(tmp_path.glob(".*.csv.*"))  # no temp file left
