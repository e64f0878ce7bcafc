"""The session folder is a complete record: a lost, emptied, stale or foreign state.db is rebuilt
from it, and no completed work is ever re-run or overwritten because the database disagrees."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from faults import LOST_DB, lose_state_db
from pipeline_helpers import POWER8_IDEA, replay_cli_args

from haytham.cli import main

SID = "recover"


def _events(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines() if x]


def _starts(folder: Path) -> int:
    return sum(e["type"] == "stage_started" for e in _events(folder))


def _stage_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.glob("stages/*/*")}


@pytest.fixture()
def at_gate_2(tmp_path: Path, capsys) -> tuple[Path, list[str]]:
    """Gate 1 clarified by the reviewer and approved; the run waits at Gate 2."""
    args = replay_cli_args(tmp_path)
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert main(["run", "--idea-file", str(idea), "--session-id", SID, "--quiet", *args]) == 0
    for invariant in ("interaction_model", "session_medium"):
        assert main(["clarify", SID, "--invariant", invariant, "--choice", "2", *args]) == 0
    assert main(["approve", SID, "--gate", "1", "--note", "ok", "--quiet", *args]) == 0
    capsys.readouterr()
    return tmp_path / "sessions", args


def _status(args: list[str], sid: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["status", sid, "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("how", LOST_DB)
def test_a_lost_state_db_is_rebuilt_and_nothing_reruns(at_gate_2, capsys, how) -> None:
    sessions, args = at_gate_2
    folder = sessions / SID
    before = _status(args, SID, capsys)
    gates, files, starts = (
        (folder / "gates.json").read_bytes(),
        _stage_files(folder),
        _starts(folder),
    )
    lose_state_db(folder, how)
    # read-only commands see the whole session without writing anything
    after = _status(args, SID, capsys)
    assert after["state"] == "waiting" and after["gate"] == 2
    assert after["summary"]["stages"] == before["summary"]["stages"]
    assert main(["export", SID, "--format", "json", *args]) == 0
    assert len(json.loads(capsys.readouterr().out)["outputs"]) == 6
    # resume rebuilds the database, re-runs nothing and keeps the reviewer's decisions
    assert main(["resume", SID, "--quiet", *args]) == 0
    assert _starts(folder) == starts and _stage_files(folder) == files
    assert (folder / "gates.json").read_bytes() == gates
    gate_1 = json.loads(gates)["1"]
    assert gate_1["status"] == "approved" and len(gate_1["clarifications"]) == 2
    rebuilt = [e["data"] for e in _events(folder) if e["type"] == "state_rebuilt"]
    assert [r["position"] for r in rebuilt] == ["verify_what"]  # the last step before Gate 2
    # and the session goes on from where it stood
    assert main(["approve", SID, "--gate", "2", "--quiet", *args]) == 0
    assert _status(args, SID, capsys)["gate"] == 3


def test_a_copied_session_folder_keeps_its_work_under_the_new_id(at_gate_2, capsys) -> None:
    sessions, args = at_gate_2
    original = sessions / SID
    shutil.copytree(original, sessions / "copy")
    untouched = _stage_files(original)
    copy = _status(args, "copy", capsys)
    assert copy["session_id"] == "copy" and copy["gate"] == 2
    starts = _starts(sessions / "copy")
    assert main(["resume", "copy", "--quiet", *args]) == 0
    assert _starts(sessions / "copy") == starts
    assert main(["approve", "copy", "--gate", "2", "--quiet", *args]) == 0
    assert _status(args, "copy", capsys)["gate"] == 3
    assert _status(args, SID, capsys)["gate"] == 2 and _stage_files(original) == untouched


def test_an_older_session_without_a_snapshot_is_rebuilt_from_its_copied_rows(
    at_gate_2, capsys
) -> None:
    sessions, args = at_gate_2
    shutil.copytree(sessions / SID, sessions / "older")
    (sessions / "older" / "state.json").unlink()  # written only since this change
    starts = _starts(sessions / "older")
    assert main(["resume", "older", "--quiet", *args]) == 0
    assert _starts(sessions / "older") == starts
    assert _status(args, "older", capsys)["gate"] == 2


def test_a_stale_state_db_is_rebuilt_from_the_newer_snapshot(at_gate_2, tmp_path, capsys) -> None:
    sessions, args = at_gate_2
    folder = sessions / SID
    early = tmp_path / "early.db"
    shutil.copy(folder / "state.db", early)
    assert main(["approve", SID, "--gate", "2", "--quiet", *args]) == 0
    files = _stage_files(folder)
    shutil.copy(early, folder / "state.db")  # an older backup put back
    assert main(["resume", SID, "--quiet", *args]) == 0
    assert _stage_files(folder) == files  # the HOW stages were not deleted or re-run
    assert _status(args, SID, capsys)["gate"] == 3


def test_without_database_or_snapshot_a_session_with_stages_is_refused(at_gate_2, capsys) -> None:
    sessions, args = at_gate_2
    folder = sessions / SID
    (folder / "state.db").unlink()
    (folder / "state.json").unlink()
    files = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["resume", SID, *args]) == 1
    err = capsys.readouterr().err
    assert "state.db" in err and "nothing was changed" in err and "Traceback" not in err
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == files


def test_an_event_ahead_of_the_saved_state_is_not_completion(at_gate_2, capsys) -> None:
    sessions, args = at_gate_2
    with (sessions / SID / "events.jsonl").open("a") as log:
        for kind in ("stage_started", "stage_completed"):
            log.write(json.dumps({"ts": "t", "type": kind, "stage": "system-traits"}) + "\n")
    row = _status(args, SID, capsys)["summary"]["stages"]["system-traits"]
    assert row["status"] == "interrupted"  # what resume will do: run it


def test_clear_from_leaves_nothing_of_the_cleared_stages(at_gate_2, capsys) -> None:
    sessions, args = at_gate_2
    folder = sessions / SID
    assert (folder / "verifications" / "what.json").exists()
    assert main(["clear-from", SID, "mvp-scope", *args]) == 0
    assert sorted(p.name for p in (folder / "stages").iterdir()) == [
        "01-idea-analysis",
        "02-market-context",
        "03-risk-assessment",
        "04-validation-summary",
    ]
    assert sorted(p.name for p in (folder / "verifications").glob("*.json")) == ["why.json"]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["stages"]["mvp-scope"]["status"] == "pending"
    assert summary["stages"]["capability-model"]["status"] == "pending"
    assert set(summary["divergence"]) <= {"idea-analysis", "market-context", "risk-assessment"} | {
        "validation-summary"
    }
