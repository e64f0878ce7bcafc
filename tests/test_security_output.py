"""Model text is data wherever it is shown (issue 15), and odd input is refused before anything
exists. Every test goes through the real CLI (``haytham.cli.main``) unless it names a function.

A. spreadsheet exports (CSV, Jira, Linear) neutralise formula cells per OWASP;
B. ``show``, ``status`` and stdout exports carry no escape sequence or control character;
C. line breaks and ``|`` in model text cannot reshape a Markdown table;
D. undecodable arguments, unspaced scripts, invisible ideas, unbounded or binary files and bad
   ``--output`` places: one sentence, the right exit code, nothing half-made.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import (
    POWER8,
    POWER8_IDEA,
    made_sessions,
    one_sentence,
    refused_run,
    replay_cli_args,
)

from haytham.cli import main
from haytham.safety.sanitize import FORMULA_LEADS, spreadsheet_cell, terminal_safe
from haytham.stages.render import render_value

# -- payloads -----------------------------------------------------------------------------------

ESCAPES = {
    "csi-clear": "\x1b[2J\x1b[3J\x1b[H",
    "osc-title": "\x1b]0;pwned\x07",
    "osc8-link": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "c1-csi": "\x9b31m",
    "c1-osc": "\x9d0;title\x9c",
    "dcs": "\x1bPq#0;2;0;0;0\x1b\\",
    "c0": "\x00\x07\x08\x0b\x0c\x7f",
    "cr-overprint": "safe\rEVIL",
}
MARKED = "".join(f"<<{name}:{seq}>>" for name, seq in ESCAPES.items())
# One payload per story title (the fixture cassette has eight stories).
FORMULA_TITLES = (
    '=HYPERLINK("http://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "  =1+1",
    "\r=1+1",
    "\x1b[31m=1+1",
)
TABLE_BREAKERS = ("a\rb", "a\nb", "a\r\nb", "a | b", "a\\|b", "|", "x\u2028y")


def _controls(text: str) -> set[str]:
    """Characters a terminal acts on: C0 but newline and tab, DEL, C1."""
    return {c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F}


def _tables(markdown: str) -> list[list[str]]:
    """Blocks of consecutive lines that start with ``|``."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def _columns(row: str) -> int:
    """Cell separators in a table row as GitHub Markdown splits it: a ``|`` not right after a
    backslash (GFM's table rule: ``\\|`` is a pipe inside the cell, even after another ``\\``)."""
    return sum(1 for n, c in enumerate(row) if c == "|" and (n == 0 or row[n - 1] != "\\"))


# -- a finished session whose model text is hostile ---------------------------------------------


def _poisoned_cassette(folder: Path) -> Path:
    lines = []
    for raw in (POWER8 / "full" / "pipeline.jsonl").read_text().splitlines():
        turn = json.loads(raw)
        for part in turn["response"]:
            body = part.get("input")
            if not body:
                continue
            if turn["agent"] == "idea-analysis":
                body["tldr"] = MARKED + body["tldr"]
            if turn["agent"] == "anchor-extraction":
                for inv in body["invariants"]:
                    if inv.get("ambiguity"):
                        inv["ambiguity"] = "\x1b[2J\x9b31m" + inv["ambiguity"] + "\x1b]0;t\x07"
            if turn["agent"] == "story-generation":
                stories = body["payload"]["stories"]
                assert len(stories) == len(FORMULA_TITLES)
                for story, lead, breaker in zip(
                    stories, FORMULA_TITLES, TABLE_BREAKERS + ("|",), strict=True
                ):
                    story["title"] = f"{lead} {story['title']}"
                    story["description"] = f"{breaker}\r\n| cell |\r{story['description']}"
                    story["acceptance_criteria"][0] = "=1+1 " + story["acceptance_criteria"][0]
        lines.append(json.dumps(turn))
    cassette = folder / "cassette"
    cassette.mkdir()
    (cassette / "pipeline.jsonl").write_text("\n".join(lines) + "\n")
    (cassette / "verify.jsonl").write_text((POWER8 / "full" / "verify.jsonl").read_text())
    return cassette


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory) -> tuple[Path, list[str]]:
    """Session ``poison`` (run to the end) and ``gate1`` (waiting at Gate 1 with ambiguities)."""
    tmp_path = tmp_path_factory.mktemp("poisoned")
    args = replay_cli_args(tmp_path, _poisoned_cassette(tmp_path))
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    run = ["run", "--idea-file", str(idea), "--quiet", *args]
    assert main([*run, "--session-id", "poison", "--auto-approve"]) == 0
    assert main([*run, "--session-id", "gate1", "--until", "gate-1"]) == 0
    return tmp_path, args


def _out(capsys, argv: list[str], args: list[str]) -> str:
    capsys.readouterr()
    code = main([*argv, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


# -- A. spreadsheet formula injection -----------------------------------------------------------


@pytest.mark.parametrize("cell", [*FORMULA_TITLES, "\n=1", " \t@x", "\u00a0=1", "-", "+"])
def test_a_formula_leading_cell_gets_a_quote_and_keeps_its_text(cell: str) -> None:
    """spreadsheet_cell (the one OWASP rule): leading = + - @ tab CR, also after spaces."""
    out = spreadsheet_cell(cell)
    assert isinstance(out, str) and out.startswith("'")
    assert out[1:] == terminal_safe(cell)


@pytest.mark.parametrize("cell", ["plain text", "a=b", "100", "", "email@example.com", "x-1"])
def test_a_ordinary_cells_are_unchanged(cell: str) -> None:
    assert spreadsheet_cell(cell) == cell
    assert spreadsheet_cell(42) == 42


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "output-file"])
@pytest.mark.parametrize("fmt", ["csv", "jira", "linear"])
def test_a_spreadsheet_exports_neutralise_every_formula_cell(
    poisoned, capsys, fmt: str, to_file: bool
) -> None:
    tmp_path, args = poisoned
    if to_file:
        target = tmp_path / f"out-{fmt}.csv"
        _out(capsys, ["export", "poison", "--format", fmt, "--output", str(target)], args)
        text = target.read_text(encoding="utf-8")
    else:
        text = _out(capsys, ["export", "poison", "--format", fmt], args)
    rows = list(csv.reader(io.StringIO(text)))
    cells = [c for row in rows[1:] for c in row]
    live = [c for c in cells if c[:1] in FORMULA_LEADS or c.lstrip()[:1] in FORMULA_LEADS]
    assert not live, live
    assert not _controls(text.replace("\r", "")), _controls(text)
    # each title payload is kept, behind one quote
    title = {"csv": "title", "jira": "Summary", "linear": "Title"}[fmt]
    column = rows[0].index(title)
    titles = [row[column] for row in rows[1:]]
    for lead in FORMULA_TITLES:
        if fmt != "linear":  # Linear titles start with the story id, so they are safe as they are
            assert any(t.startswith("'") and terminal_safe(lead) in t for t in titles), lead
        assert any(terminal_safe(lead).strip() in t for t in titles), lead


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_a_json_and_markdown_keep_model_text_without_quotes(poisoned, capsys, fmt: str) -> None:
    _, args = poisoned
    text = _out(capsys, ["export", "poison", "--format", fmt], args)
    if fmt == "json":
        stories = json.loads(text)["outputs"]["story-generation"]["payload"]["stories"]
        assert [s["title"].split(" ", 1)[0] for s in stories][:4] == [
            t.split(" ", 1)[0] for t in FORMULA_TITLES[:4]
        ]
        assert stories[4]["title"].startswith("\t=1+1")  # exactly as the model wrote it
    else:
        assert "=HYPERLINK(" in text and "'=HYPERLINK(" not in text


# -- B. terminal escape sequences ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(ESCAPES))
def test_b_terminal_safe_drops_each_sequence_and_keeps_the_text(name: str) -> None:
    """terminal_safe (the one terminal rule): no control left, the words around it kept."""
    text = terminal_safe(f"before {ESCAPES[name]} after\n\tindented")
    assert not _controls(text) and "\x1b" not in text
    assert text.startswith("before ") and text.endswith(" after\n\tindented")


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "poison", "idea-analysis"],
        ["show", "poison", "story-generation"],
        ["show", "gate1", "anchor"],
        ["status", "gate1"],
        ["status", "poison"],
        ["export", "poison", "--format", "markdown"],
        ["export", "poison", "--format", "csv"],
        ["sessions"],
    ],
    ids=lambda a: "-".join(a),
)
def test_b_show_status_and_exports_print_no_control_characters(poisoned, capsys, argv) -> None:
    _, args = poisoned
    out = _out(capsys, argv, args)
    assert out.strip() and not _controls(out), (argv, _controls(out))
    if argv[-1] == "idea-analysis":  # the text around every payload survives
        for name in ESCAPES:
            assert f"<<{name}:" in out, name
        assert "click" in out and "EVIL" in out
    if argv == ["status", "gate1"]:
        assert "clarify " in out and "Options:" in out


@pytest.mark.parametrize(
    "argv", [["status", "gate1", "--json"], ["export", "gate1", "--format", "json"]]
)
def test_b_json_on_a_terminal_is_escaped_and_loses_nothing(poisoned, capsys, argv) -> None:
    _, args = poisoned
    out = _out(capsys, argv, args)
    assert not _controls(out), _controls(out)
    data = json.loads(out)  # still valid JSON
    if argv[0] == "status":
        texts = [a["ambiguity"] for a in data["open_ambiguities"]]
        assert any("\x1b[2J\x9b31m" in t for t in texts), texts  # the exact model text
    else:
        assert data["outputs"]["idea-analysis"]["tldr"].startswith(MARKED)


# -- C. Markdown tables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [["show", "poison", "story-generation"], ["export", "poison", "--format", "markdown"]],
    ids=["show", "export"],
)
def test_c_line_breaks_and_pipes_in_cells_keep_every_table_row_whole(
    poisoned, capsys, argv
) -> None:
    _, args = poisoned
    out = _out(capsys, argv, args)
    tables = _tables(out)
    assert tables
    for block in tables:
        assert len({_columns(row) for row in block}) == 1, block
    assert "\\| cell \\|" in out  # the pipes are kept, escaped


@pytest.mark.parametrize("breaker", TABLE_BREAKERS)
def test_c_table_cells_and_headers_are_escaped(breaker: str) -> None:
    """render_value's tables: a break or a pipe in a value or a key stays inside its cell."""
    rows = [{"id": "S-1", f"key{breaker}": f"v{breaker}w", "n": 1}, {"id": "S-2", "n": 2}]
    lines = [ln for ln in render_value(rows) if ln]
    assert len(lines) == 4, lines  # header, rule, two rows
    assert len({_columns(ln) for ln in lines}) == 1, lines
    assert all(not _controls(ln) for ln in lines)
    letters = "".join(c for c in breaker if c.isalnum())
    assert f"v{letters}w" in "".join(c for c in lines[2] if c.isalnum())  # the text is kept
    assert ("|" not in breaker) or "\\|" in lines[2]


# -- D. input edges -----------------------------------------------------------------------------

NO_WORDS = "one two three four five six seven eight nine"


@pytest.mark.parametrize(
    "raw",
    [b"\xff\xfe", b"\x80", b"\xe4\xb8", b"\xed\xa0\x80", b"\xc0\xaf"],
    ids=["ff-fe", "lone-continuation", "truncated-cjk", "encoded-surrogate", "overlong"],
)
@pytest.mark.parametrize("where", ["idea", "session-id"])
def test_d1_undecodable_argument_bytes_are_refused_before_anything_exists(
    tmp_path: Path, capsys, raw: bytes, where: str
) -> None:
    bad = os.fsdecode(b"broken " + raw)  # what argv gives Python for these bytes
    argv = (
        ["--idea", os.fsdecode(POWER8_IDEA.encode()[:400] + raw)]
        if where == "idea"
        else ["--idea", POWER8_IDEA, "--session-id", bad]
    )
    assert "UTF-8" in refused_run(tmp_path, capsys, argv)


def _memory_cap() -> None:
    """In the child: 4 GB of address space, so an unbounded read fails fast instead of eating
    the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--idea", b"An app for my patients \xff\xfe who meet in groups of eight online"],
        ["run", "--idea-file", "/dev/zero"],
        ["run", "--idea-file", "/dev/urandom"],
    ],
    ids=["argv-bytes", "dev-zero", "dev-urandom"],
)
def test_d1_d4_a_real_process_refuses_quickly_inone_sentence(tmp_path: Path, argv) -> None:
    """The real argv decoding (surrogateescape) and an endless file, in a separate process."""
    args = [a.encode() for a in replay_cli_args(tmp_path)]
    cmd = [
        sys.executable.encode(),
        b"-m",
        b"haytham.cli",
        *[a if isinstance(a, bytes) else a.encode() for a in argv],
        b"--quiet",
        *args,
    ]
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    env.pop("HAYTHAM_PROVIDER", None)
    proc = subprocess.run(
        cmd, capture_output=True, cwd=tmp_path, env=env, timeout=120, preexec_fn=_memory_cap
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    line = one_sentence(err)
    assert ("UTF-8" if argv[1] == "--idea" else "larger than") in line
    assert not made_sessions(tmp_path / "sessions")


CJK_IDEAS = {
    "chinese": "一位心理学家想为他的现有患者开发一个私密应用程序，八名患者在线聚会，"
    "其中一人提出具体需求，其他七人发送善意。",
    "japanese": "心理士が既存の患者さんのための非公開アプリを作りたい。八人がオンラインで集まり、"
    "一人が願いを話し、残りの七人が善意を送ります。",
    "thai": "นักจิตวิทยาต้องการสร้างแอปส่วนตัวสำหรับผู้ป่วยของเขาแปดคนพบกันออนไลน์และส่งความปรารถนาดี",
    "korean": "심리학자가기존환자들을위한비공개앱을만들고싶어합니다여덟명이온라인에서모입니다",
}


@pytest.mark.parametrize("script", list(CJK_IDEAS))
def test_d2_an_unspaced_idea_is_accepted_and_stored(tmp_path: Path, capsys, script: str) -> None:
    cassette = tmp_path / "empty.jsonl"  # loads, answers nothing: the run stops after creation
    cassette.write_text('{"agent": "nobody", "turn": 1, "response": [{"text": "x"}]}\n')
    args = replay_cli_args(tmp_path, cassette)
    capsys.readouterr()
    idea = CJK_IDEAS[script]
    code = main(["run", "--idea", idea, "--session-id", "u", "--quiet", *args])
    err = capsys.readouterr().err
    assert code == 1 and "write at least" not in err, err  # past validation, stopped later
    exported = json.loads(_out(capsys, ["export", "u", "--format", "json"], args))
    assert exported["idea"] == idea


@pytest.mark.parametrize(
    ("idea", "words"),
    [("你好世界", 2), ("こんにちは", 3), ("สวัสดีครับ", 5), ("안녕하세요", 3), ("日本語 test", 3)],
)
def test_d2_a_short_unspaced_idea_is_measured_by_characters(
    tmp_path: Path, capsys, idea: str, words: int
) -> None:
    line = refused_run(tmp_path, capsys, ["--idea", idea])
    assert f"has {words} words" in line


@pytest.mark.parametrize(
    "idea",
    [
        "\u200b" * 60,
        "\u200c\u200d" * 30,
        "\u2060 " * 30,
        "\ufeff" * 30,
        "\u200b \u00a0 \u3000 \u2800 \u3164 \ufe0f \u180e \u00ad " * 10,
        "\U000e0041\U000e0042 " * 20,
        NO_WORDS + " \ufe0f" * 10,
        NO_WORDS + " \u200b" * 10,
        NO_WORDS + " \u0301" * 10,
    ],
    ids=[
        "zwsp",
        "zwnj-zwj",
        "word-joiner",
        "bom",
        "mixed-blanks",
        "tags",
        "9-words+variation-selectors",
        "9-words+zwsp",
        "9-words+combining-marks",
    ],
)
def test_d3_an_invisible_idea_isrefused_run(tmp_path: Path, capsys, idea: str) -> None:
    """Only invisible characters: "empty"; nine words padded with invisible tokens: nine."""
    line = refused_run(tmp_path, capsys, ["--idea", idea])
    assert ("has 9 words" if idea.startswith(NO_WORDS) else "The idea is empty") in line


def test_d4_a_huge_idea_file_is_read_only_up_to_the_limit(tmp_path: Path, capsys) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as fh:
        fh.truncate(1 << 40)  # sparse 1 TB: reading it whole would fail, not refuse
    assert "larger than an idea can be" in refused_run(tmp_path, capsys, ["--idea-file", str(huge)])


@pytest.mark.parametrize("kind", ["folder", "missing", "binary", "latin-1"])
def test_d4_an_unreadable_idea_file_isone_sentence(tmp_path: Path, capsys, kind: str) -> None:
    path = tmp_path / "idea.md"
    if kind == "folder":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "latin-1":
        path.write_bytes(POWER8_IDEA.encode() + "café".encode("latin-1"))
    refused_run(tmp_path, capsys, ["--idea-file", str(path)])


def test_d4_a_huge_cassette_is_read_only_up_to_the_limit(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.setattr("haytham.models.replay.MAX_CASSETTE_BYTES", 1 << 16)
    cassette = tmp_path / "huge.jsonl"
    with cassette.open("wb") as fh:
        fh.truncate(1 << 40)
    line = refused_run(tmp_path, capsys, ["--idea", POWER8_IDEA], cassette)
    assert "larger than" in line


@pytest.mark.parametrize(
    "content",
    [
        bytes(range(256)) * 16,
        b"\x1f\x8b\x08\x00" + b"\x00" * 64,
        b"not json at all\n",
        b'{"agent": 1, "turn": 0}\n',
        b'{"agent": "a", "turn": 1, "response": [{"bad": 1}]}\n',
        b"\x00" * 64 + b"\n",
        b"[1, 2, 3]\n",
    ],
    ids=["binary", "gzip", "text", "wrong-fields", "bad-item", "nul-bytes", "array"],
)
@pytest.mark.parametrize("as_folder", [False, True], ids=["file", "folder"])
def test_d5_a_bad_cassette_is_refused_before_a_session_exists(
    tmp_path: Path, capsys, content: bytes, as_folder: bool
) -> None:
    if as_folder:
        (tmp_path / "cas").mkdir()
        cassette = tmp_path / "cas" / "a.jsonl"
    else:
        cassette = tmp_path / "cassette.jsonl"
    cassette.write_bytes(content)
    where = cassette.parent if as_folder else cassette
    line = refused_run(tmp_path, capsys, ["--idea", POWER8_IDEA], where)
    assert "cassette" in line.lower()


@pytest.mark.parametrize(
    "where",
    ["folder", "missing", "unwritable", "too-long", "nul", "full-device", "full-disk", "read-only"],
)
def test_d6_export_destination_errors_are_one_sentence_with_nothing_written(
    poisoned, capsys, monkeypatch, where: str
) -> None:
    tmp_path, args = poisoned
    out_dir = tmp_path / f"out-{where}"
    out_dir.mkdir()
    existing = out_dir / "existing.csv"
    existing.write_text("old\n")
    target = {
        "folder": str(out_dir),
        "missing": str(out_dir / "no" / "such" / "out.csv"),
        "unwritable": "/proc/haytham-export.csv",
        "too-long": str(out_dir / ("x" * 5000)),
        "nul": str(out_dir / "a\x00b.csv"),
        "full-device": str(out_dir / "full.csv"),  # a link to /dev/full, made below
        "full-disk": str(existing),
        "read-only": str(existing),
    }[where]
    if where == "full-device":
        # Through a link in our own folder: code that replaced the target instead of writing to
        # it would replace the link, never the machine's /dev/full.
        if not Path("/dev/full").is_char_device():
            pytest.skip("no /dev/full here")
        (out_dir / "full.csv").symlink_to("/dev/full")
    if where in ("full-disk", "read-only"):
        code = errno.ENOSPC if where == "full-disk" else errno.EROFS

        def fail(*_a, **_k):
            raise OSError(code, os.strerror(code))

        hook = "haytham.reports.export.os.fsync" if where == "full-disk" else "tempfile.mkstemp"
        monkeypatch.setattr(hook, fail)
    capsys.readouterr()
    code = main(["export", "poison", "--format", "csv", "--output", target, *args])
    err = capsys.readouterr().err
    assert code in (1, 2), err
    line = one_sentence(err)
    if where in ("full-device", "full-disk"):
        assert "disk is full" in line
    if where == "read-only":
        assert "not writable" in line
    left = sorted(p.name for p in out_dir.iterdir())
    assert left == ["existing.csv"] + (["full.csv"] if where == "full-device" else [])
    assert where != "full-device" or (out_dir / "full.csv").is_char_device()
    assert existing.read_text() == "old\n"
