"""Bad and hostile input (issue 8), beyond tests/test_bad_input.py: text in any script kept as
data, wrong gate commands refused with state unchanged, ids and paths refused before any file
access, and no HTML rendering of user or model text in the UI."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import (
    POWER8_IDEA,
    capture_prompts,
    replay_cli_args,
    replay_settings,
)

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import InputError

FRONTEND = Path(__file__).resolve().parent.parent / "frontend_streamlit"
RTL_EMOJI = (
    "أنا طبيب نفسي وأريد تطبيقًا لمرضاي 🧘‍♀️🙏 — אני רוצה מעגל של שמונה אנשים "
    "\u200fשולחים משאלות טובות\u200f 💫👩🏽‍⚕️. "
)
HTML = (
    '<script>alert("x")</script><img src=x onerror="alert(1)"> <b>bold</b> '
    '<iframe src="https://evil.example"></iframe> '
)
SID = "bad"


def _files(root: Path) -> dict[Path, bytes]:
    return {
        p.relative_to(root): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name not in (".lock",)
    }


@pytest.fixture(scope="module")
def gate_1(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("gate1")
    with make_service(replay_settings(base)) as svc:
        svc.create_session(POWER8_IDEA, session_id=SID)
        assert svc.run(SID).gate == 1
    return base / "sessions" / SID


@pytest.fixture
def at_gate_1(gate_1, tmp_path) -> Path:
    root = tmp_path / "sessions" / SID
    shutil.copytree(gate_1, root)
    return root


# -- text in any script, HTML as text ----------------------------------------------------------
@pytest.mark.parametrize("prefix", [RTL_EMOJI, HTML], ids=["rtl-emoji", "html-script"])
def test_unusual_idea_text_is_kept_verbatim_as_quoted_data(tmp_path, monkeypatch, capsys, prefix):
    prompts = capture_prompts(monkeypatch)
    idea = prefix + POWER8_IDEA
    assert main(["run", "--idea", idea, "--session-id", "text", *replay_cli_args(tmp_path)]) == 0
    assert "waiting at Gate 1" in capsys.readouterr().out
    root = tmp_path / "sessions" / "text"
    assert (root / "idea.md").read_text(encoding="utf-8") == idea.strip() + "\n"
    assert main(["status", "text", "--json", *replay_cli_args(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["idea"] == idea.strip()[:200]
    assert main(["export", "text", "--format", "json", *replay_cli_args(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["idea"] == idea.strip()
    body = next(p["text"] for p in prompts if p["agent"] == "idea-analysis")
    quoted = body[body.index("<<<IDEA") : body.rindex("IDEA>>>")]
    assert prefix.strip() in quoted  # inside the data delimiters, unaltered


def test_the_ui_never_renders_user_or_model_text_as_html():
    """``unsafe_allow_html`` only ever with a literal string; no raw-HTML components."""
    offenders = []
    for path in sorted(FRONTEND.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name.endswith(("st.html", "components.html", "v1.html")):
                offenders.append(f"{path.name}:{node.lineno} {name}")
            for kw in node.keywords:
                unsafe = kw.arg == "unsafe_allow_html" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                )
                literal = node.args and isinstance(node.args[0], ast.Constant)
                if unsafe and not literal:
                    offenders.append(f"{path.name}:{node.lineno} unsafe_allow_html")
    assert not offenders, offenders


# -- gate commands: clear errors, state unchanged -----------------------------------------------
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["clarify", SID, "--invariant", "session_medium", "--choice", "7"],
            "'7' is not an option for 'session_medium'. Options: 1. Video/audio call",
        ),
        (["clarify", SID, "--invariant", "session_medium", "--choice", "0"], "is not an option"),
        (["clarify", SID, "--invariant", "session_medium", "--choice", "-1"], "is not an option"),
        (
            ["clarify", SID, "--invariant", "session_medium", "--choice", "Carrier pigeon"],
            "'Carrier pigeon' is not an option",
        ),
        (["clarify", SID, "--invariant", "session_medium", "--choice", ""], "is not an option"),
        (["clarify", SID, "--invariant", "access_model", "--choice", "1"], "is not ambiguous"),
        (
            ["clarify", SID, "--invariant", "payment_model", "--choice", "1"],
            "No invariant named 'payment_model'",
        ),
        (["approve", SID, "--gate", "0"], "Gate must be 1, 2, 3 or 4, not 0"),
        (["approve", SID, "--gate", "5"], "Gate must be 1, 2, 3 or 4, not 5"),
        (["reject", SID, "--gate", "-1"], "Gate must be 1, 2, 3 or 4, not -1"),
        (["override", SID, "--gate", "99", "--reason", "x"], "Gate must be 1, 2, 3 or 4"),
        (["approve", SID, "--gate", "2"], "not waiting at Gate 2 (next step: gate_1)"),
        (["override", SID, "--gate", "1", "--reason", ""], "An override needs a reason"),
        (["override", SID, "--gate", "1", "--reason", "   \t "], "An override needs a reason"),
        (["approve", SID, "--gate", "1"], "2 invariant(s) need clarification first"),
        (["rework", SID, "--stage", "no-such-stage", "--feedback", "x"], "no-such-stage"),
    ],
)
def test_invalid_gate_commands_are_refused_and_change_nothing(
    at_gate_1, tmp_path, capsys, argv, says
):
    before = _files(at_gate_1)
    assert main([*argv, *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert _files(at_gate_1) == before  # not even an event


def test_approving_a_gate_twice_is_refused_and_recorded_once(at_gate_1, tmp_path, capsys):
    opts = replay_cli_args(tmp_path)
    for prop in ("interaction_model", "session_medium"):
        assert main(["clarify", SID, "--invariant", prop, "--choice", "1", *opts]) == 0
    assert main(["approve", SID, "--gate", "1", *opts]) == 0
    before = _files(at_gate_1)
    capsys.readouterr()
    assert main(["approve", SID, "--gate", "1", *opts]) == 2
    assert "not waiting at Gate 1 (next step: gate_2)" in capsys.readouterr().err
    assert _files(at_gate_1) == before
    events = [json.loads(x) for x in (at_gate_1 / "events.jsonl").read_text().splitlines()]
    approvals = [
        e
        for e in events
        if e["type"] == "gate_command"
        and e["data"]["command"] == "approve"
        and e["data"]["gate"] == 1
    ]
    assert len(approvals) == 1


def test_a_superscript_digit_choice_is_a_clear_input_error(at_gate_1, tmp_path):
    with (
        make_service(replay_settings(tmp_path)) as svc,
        pytest.raises(InputError, match="is not an option"),
    ):
        svc.clarify(SID, "session_medium", "²")


# -- ids and paths: refused before any file access -----------------------------------------------
@pytest.mark.parametrize(
    "bad_id",
    [
        "x" * 10_000,
        "..",
        ".",
        "_tracking",
        "a\x00b",
        "ａｂｃ",
        "abc\n",
        "abc/../../etc",
        "~root",
        "a" * 65,
        " abc",
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["resume"],
        ["approve", "--gate", "1"],
        ["show", "anchor"],
        ["export"],
        ["clear-from", "mvp-scope"],
    ],
)
def test_bad_session_ids_are_refused_before_any_file_access(tmp_path, capsys, bad_id, command):
    sessions = tmp_path / "sessions"
    argv = [command[0], bad_id, *command[1:], *replay_cli_args(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Invalid session id" in err and "Traceback" not in err
    assert len(err) < 400  # a 10,000-character id is not echoed back
    assert not sessions.exists()


@pytest.mark.parametrize("bad_id", ["../outside", "/tmp/abs", "x" * 65, "UPPER"])
def test_a_new_session_or_fork_with_a_bad_id_creates_nothing(at_gate_1, tmp_path, capsys, bad_id):
    opts = replay_cli_args(tmp_path)
    before = sorted(p.name for p in (tmp_path / "sessions").iterdir())
    assert main(["run", "--idea", POWER8_IDEA, "--session-id", bad_id, *opts]) == 2
    assert main(["fork", SID, "--from", "mvp-scope", "--session-id", bad_id, *opts]) == 2
    assert capsys.readouterr().err.count("Invalid session id") == 2
    assert sorted(p.name for p in (tmp_path / "sessions").iterdir()) == before
    assert not (tmp_path / "outside").exists()


def test_a_symlinked_folder_inside_a_session_cannot_redirect_writes(at_gate_1, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(at_gate_1 / "stages")
    (at_gate_1 / "stages").symlink_to(outside)
    assert main(["resume", SID, *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "resolves outside session bad" in err and "refusing" in err
    assert list(outside.iterdir()) == []
