"""The session folder and state.db never disagree silently (issue 15).

Beyond tests/test_reliability_recovery.py (rebuild on resume, refusal on resume, clear-from's
files): reading a damaged session writes nothing, a copy keeps every decision, a copied failed
step is re-run, a session older than ``state.json`` gets one on open, an unreadable snapshot is
reported, every reading command refuses stages without any state, and clear-from leaves the
summary a session that never ran the cleared stages has.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from faults import LOST_DB, lose_state_db
from pipeline_helpers import POWER8_IDEA, cassette_with, replay_cli_args

from haytham.cli import main

SID = "files"
SKIP = {"events.jsonl", "state.db", ".lock"}  # the log and the database, not projections


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One replay session, copied twice: at Gate 1 (clarified, not approved) and at Gate 2."""
    root = tmp_path_factory.mktemp("built")
    args = replay_cli_args(root)
    idea = root / "idea.md"
    idea.write_text(POWER8_IDEA)
    with pytest.MonkeyPatch.context() as env:  # conftest's default, for a module fixture
        env.setenv("HAYTHAM_EMBEDDINGS", "off")
        assert main(["run", "--idea-file", str(idea), "--session-id", SID, "--quiet", *args]) == 0
        for invariant in ("interaction_model", "session_medium"):
            assert main(["clarify", SID, "--invariant", invariant, "--choice", "2", *args]) == 0
        gate_1 = root / "gate_1"
        shutil.copytree(root / "sessions" / SID, gate_1)
        assert main(["approve", SID, "--gate", "1", "--note", "ok", "--quiet", *args]) == 0
    return gate_1, root / "sessions" / SID


@pytest.fixture()
def at_gate_2(built, tmp_path: Path) -> tuple[Path, list[str], Path]:
    """A fresh copy of the Gate 2 session: (its folder, CLI options, the Gate 1 copy)."""
    gate_1, gate_2 = built
    folder = tmp_path / "sessions" / SID
    shutil.copytree(gate_2, folder)
    return folder, replay_cli_args(tmp_path), gate_1


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _events(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines() if x]


def _starts(folder: Path) -> int:
    return sum(e["type"] == "stage_started" for e in _events(folder))


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _status(sid: str, args: list[str], capsys) -> dict:
    code, out, err = _cli(["status", sid, "--json", *args], capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("how", LOST_DB)
def test_reading_a_session_with_a_lost_database_writes_nothing(at_gate_2, capsys, how) -> None:
    folder, args, _ = at_gate_2
    before = _status(SID, args, capsys)
    lose_state_db(folder, how)
    files = _tree(folder)
    after = _status(SID, args, capsys)
    assert after["summary"]["stages"] == before["summary"]["stages"]
    assert after["gates"] == before["gates"] and after["gate"] == 2
    code, out, _ = _cli(["export", SID, "--format", "json", *args], capsys)
    assert code == 0 and len(json.loads(out)["outputs"]) == 6
    code, out, _ = _cli(["show", SID, "capability-model", *args], capsys)
    assert code == 0 and out.strip()
    assert _tree(folder) == files  # not even an empty table was created in state.db


def test_a_copied_folder_keeps_outputs_approvals_and_clarifications(at_gate_2, capsys) -> None:
    folder, args, _ = at_gate_2
    copy = folder.parent / "copy"
    shutil.copytree(folder, copy)
    original = _tree(folder)
    export = _cli(["export", SID, "--format", "json", *args], capsys)[1]
    assert _cli(["export", "copy", "--format", "json", *args], capsys)[1] == export.replace(
        f'"session_id": "{SID}"', '"session_id": "copy"'
    )
    status = _status("copy", args, capsys)
    gate_1 = status["gates"]["1"]
    assert gate_1["status"] == "approved" and len(gate_1["clarifications"]) == 2
    assert status["open_ambiguities"] == [] and status["gate"] == 2
    starts = _starts(copy)
    assert main(["resume", "copy", "--quiet", *args]) == 0
    assert _starts(copy) == starts  # nothing re-ran
    rebuilt = [e["data"] for e in _events(copy) if e["type"] == "state_rebuilt"]
    assert len(rebuilt) == 1 and rebuilt[0]["position"] == "verify_what"
    snapshot = json.loads((copy / "state.json").read_text())
    assert snapshot["session_id"] == "copy" and snapshot["state"]["session_id"] == "copy"
    assert main(["approve", "copy", "--gate", "2", "--quiet", *args]) == 0
    assert _status("copy", args, capsys)["gate"] == 3
    assert _tree(folder) == original  # the original folder is untouched by all of it


def test_an_old_copied_session_whose_last_step_failed_runs_that_step(tmp_path, capsys) -> None:
    broken = cassette_with(tmp_path, drop_agents={"risk-assessment"}, passing_verifiers=True)
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    run = ["run", "--idea-file", str(idea), "--session-id", SID, "--quiet"]
    assert main([*run, *replay_cli_args(tmp_path, broken)]) == 1  # risk-assessment fails
    sessions = tmp_path / "sessions"
    shutil.copytree(sessions / SID, sessions / "copy")
    (sessions / "copy" / "state.json").unlink()  # a session from before the snapshot
    assert main(["resume", "copy", "--quiet", *replay_cli_args(tmp_path)]) == 0
    assert (sessions / "copy" / "stages" / "03-risk-assessment" / "output.json").exists()
    assert _status("copy", replay_cli_args(tmp_path), capsys)["gate"] == 1


def test_a_session_from_before_the_snapshot_gets_one_when_opened(at_gate_2, capsys) -> None:
    folder, args, _ = at_gate_2
    (folder / "state.json").unlink()
    assert main(["resume", SID, "--quiet", *args]) == 0  # waits at Gate 2: no step runs
    snapshot = json.loads((folder / "state.json").read_text())
    assert snapshot["position"] == "verify_what" and snapshot["session_id"] == SID
    (folder / "state.db").unlink()
    assert _status(SID, args, capsys)["gates"]["1"]["status"] == "approved"


def test_an_unreadable_snapshot_is_reported_and_the_database_answers(at_gate_2, capsys) -> None:
    folder, args, _ = at_gate_2
    (folder / "state.json").write_text('{"state": ')
    status = _status(SID, args, capsys)
    assert status["gate"] == 2
    assert any("state.json" in problem for problem in status["broken_files"])
    assert main(["resume", SID, "--quiet", *args]) == 0
    assert json.loads((folder / "state.json").read_text())["position"] == "verify_what"


@pytest.mark.parametrize(
    "command",
    [
        ["status", SID],
        ["export", SID, "--format", "json"],
        ["show", SID, "idea-analysis"],
        ["fork", SID, "--from", "mvp-scope", "--session-id", "forked"],
        ["clear-from", SID, "mvp-scope"],
        ["approve", SID, "--gate", "2"],
    ],
    ids=lambda c: c[0],
)
def test_stages_without_any_state_are_refused_by_every_command(at_gate_2, capsys, command):
    folder, args, _ = at_gate_2
    (folder / "state.db").unlink()
    (folder / "state.json").unlink()
    files = _tree(folder)
    code, out, err = _cli([*command, *args], capsys)
    assert code == 1 and out == ""
    assert "state.db" in err and "nothing was changed" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert _tree(folder) == files
    assert sorted(p.name for p in folder.parent.iterdir()) == [SID]  # no fork was made


def test_clear_from_leaves_what_a_session_that_never_ran_those_stages_has(
    at_gate_2, capsys
) -> None:
    folder, args, gate_1 = at_gate_2
    assert main(["clear-from", SID, "mvp-scope", *args]) == 0
    after, never = _tree(folder), _tree(gate_1)
    assert sorted(set(after) - SKIP) == sorted(set(never) - SKIP)
    for rel in never:
        if rel.startswith(("stages/", "verifications/", "reviews/")) or rel == "idea.md":
            assert after[rel] == never[rel], rel
    summary, unrun = (json.loads(t["summary.json"]) for t in (after, never))
    assert summary["stages"] == unrun["stages"]  # cleared rows hold no runs, calls or tokens
    assert summary["totals"] == unrun["totals"] and summary["divergence"] == unrun["divergence"]
    assert json.loads(after["gates.json"])["1"]["status"] == "approved"
    assert main(["resume", SID, "--quiet", *args]) == 0  # and it runs them again from there
    assert _status(SID, args, capsys)["gate"] == 2
