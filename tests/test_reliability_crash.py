"""SIGKILL at the worst moments (issue 8): during a stage, a gate decision and a clarification.

Each case forks a real process that runs the CLI and kills itself with SIGKILL at one chosen
point (after the interpreter is warm, so the suite stays fast). After the "restart" the session
must be consistent — Burr state and files agree, no temp or partial file is left — and
``resume`` re-runs only what was interrupted.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from burr.core.persistence import SQLitePersister
from faults import assert_consistent, read_events, started
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, replay_settings

import haytham.agents.caller as caller
from haytham.app import make_service
from haytham.cli import main
from haytham.stages import STAGES
from haytham.storage.folder import SessionFiles

SID = "crash"
AMBIGUOUS = ("interaction_model", "session_medium")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def in_killed_child(patch: Callable[[], None], argv: list[str], timeout: float = 60) -> int:
    """Fork; the child applies ``patch`` (which arms the kill) and runs the CLI."""

    def child() -> None:
        patch()
        os._exit(main(argv))

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        pytest.fail(f"child {argv} did not finish in {timeout}s")
    return proc.exitcode


# -- kill points (run inside the child) --------------------------------------------------------
def kill_when_saving(position: str) -> Callable[[], None]:
    """Before Burr commits the state of step ``position`` to SQLite."""

    def patch() -> None:
        real = SQLitePersister.save

        def save(self, partition_key, app_id, sequence_id, pos, *args, **kw):  # noqa: ANN001
            if pos == position:
                _die()
            return real(self, partition_key, app_id, sequence_id, pos, *args, **kw)

        SQLitePersister.save = save

    return patch


def kill_when_renaming(suffix: str, after_saving: str) -> Callable[[], None]:
    """Once step ``after_saving`` is committed, mid-projection: the temp file of ``suffix`` is
    written and synced but not yet renamed."""

    def patch() -> None:
        real_save, real_replace = SQLitePersister.save, os.replace
        armed = []

        def save(self, partition_key, app_id, sequence_id, pos, *args, **kw):  # noqa: ANN001
            real_save(self, partition_key, app_id, sequence_id, pos, *args, **kw)
            if pos == after_saving:
                armed.append(pos)

        def replace(src, dst, *args, **kw):  # noqa: ANN001
            if armed and str(dst).endswith(suffix):
                _die()
            return real_replace(src, dst, *args, **kw)

        SQLitePersister.save, os.replace = save, replace

    return patch


def kill_when_logging(event_type: str) -> Callable[[], None]:
    """After state and files are written, before the audit event is appended."""

    def patch() -> None:
        real = SessionFiles.append_event

        def append(self, type_, *args, **kw):  # noqa: ANN001
            if type_ == event_type:
                _die()
            return real(self, type_, *args, **kw)

        SessionFiles.append_event = append

    return patch


def kill_in_model_call(agent: str) -> Callable[[], None]:
    def patch() -> None:
        real = caller.build_model

        def build(settings, tier, name, **kw):  # noqa: ANN001
            if name == agent:
                _die()
            return real(settings, tier, name, **kw)

        caller.build_model = build

    return patch


# -- fixtures ----------------------------------------------------------------------------------
def _opts(sessions: Path) -> list[str]:
    return ["--provider", "replay", "--cassette", str(POWER8_RUN), "--sessions-dir", str(sessions)]


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, Path]:
    """Sessions waiting at Gate 1 — two ambiguities open, and all clarified — made once."""
    made = {}
    for name, clarify in (("open", False), ("clarified", True)):
        base = tmp_path_factory.mktemp(name)
        with make_service(replay_settings(base)) as svc:
            svc.create_session(POWER8_IDEA, session_id=SID)
            assert svc.run(SID).gate == 1
            for prop in AMBIGUOUS if clarify else ():
                svc.clarify(SID, prop, "1")
        made[name] = base / "sessions" / SID
    return made


def _copy(template: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "sessions" / SID
    shutil.copytree(template, root)
    return root, _opts(tmp_path / "sessions")


@pytest.fixture
def session(templates, tmp_path) -> tuple[Path, list[str]]:
    return _copy(templates["open"], tmp_path)


@pytest.fixture
def clarified(templates, tmp_path) -> tuple[Path, list[str]]:
    return _copy(templates["clarified"], tmp_path)


# -- tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kill", "committed"),
    [
        (kill_when_saving("gate_1"), False),
        (kill_when_renaming("gates.json", "gate_1"), True),
        (kill_when_logging("gate_command"), True),
    ],
    ids=["before-state-commit", "mid-projection", "before-audit-event"],
)
def test_kill_during_a_gate_decision(clarified, kill, committed, capsys):
    root, opts = clarified
    before = (root / "gates.json").read_text()
    assert in_killed_child(kill, ["approve", SID, "--gate", "1", *opts]) == -signal.SIGKILL

    capsys.readouterr()
    assert main(["status", SID, "--json", *opts]) == 0  # readable right after the crash
    status = json.loads(capsys.readouterr().out)
    assert status["broken_files"] == []
    assert status["status"] == ("running" if committed else "waiting_gate_1")

    assert main(["resume", SID, *opts]) == 0  # the restart: files catch up with the state
    state = assert_consistent(root)
    if committed:  # the approval survived; resume went on to the next gate
        assert state["gates"]["1"]["status"] == "approved"
        assert "waiting at Gate 2" in capsys.readouterr().out
    else:  # nothing of it survived; the reviewer decides again
        assert json.loads(before)["1"]["status"] == state["gates"]["1"]["status"] == "open"
        assert main(["approve", SID, "--gate", "1", *opts]) == 0
        assert_consistent(root)
    counts = started(root)
    assert all(counts[s.slug] == 1 for s in STAGES[:6]), counts  # nothing ran twice


@pytest.mark.parametrize(
    ("kill", "committed"),
    [
        (kill_when_saving("gate_1"), False),
        (kill_when_renaming("concept_anchor.json", "gate_1"), True),
    ],
    ids=["before-state-commit", "mid-projection"],
)
def test_kill_during_anchor_clarification(session, kill, committed, capsys):
    root, opts = session
    anchor_before = json.loads((root / "concept_anchor.json").read_text())
    argv = ["clarify", SID, "--invariant", "session_medium", "--choice", "2", *opts]
    assert in_killed_child(kill, argv) == -signal.SIGKILL
    assert main(["resume", SID, *opts]) == 0
    state = assert_consistent(root)
    medium = next(i for i in state["anchor"]["invariants"] if i["property"] == "session_medium")
    clarified = state["gates"]["1"].get("clarifications", [])
    if committed:  # anchor and gate record changed together
        assert (medium["value"], medium["user_clarified"]) == ("Text-based chat room", True)
        assert [c["invariant"] for c in clarified] == ["session_medium"]
    else:
        assert state["anchor"] == anchor_before and not clarified
    with make_service(replay_settings(root.parent.parent)) as svc:
        open_now = {a["invariant"] for a in svc.status(SID)["open_ambiguities"]}
    assert open_now == ({"interaction_model"} if committed else set(AMBIGUOUS))
    for prop in sorted(open_now):
        assert main(["clarify", SID, "--invariant", prop, "--choice", "1", *opts]) == 0
    assert main(["approve", SID, "--gate", "1", *opts]) == 0
    assert_consistent(root)


@pytest.mark.parametrize(
    ("kill", "reruns"),
    [
        (kill_in_model_call("mvp-scope"), 2),  # killed while the model was working
        (
            kill_when_renaming("05-mvp-scope/output.json", "mvp_scope"),
            1,
        ),  # killed after the state was saved
    ],
    ids=["in-model-call", "after-state-commit"],
)
def test_kill_during_a_stage_reruns_only_that_stage(clarified, kill, reruns):
    root, opts = clarified
    assert in_killed_child(kill, ["approve", SID, "--gate", "1", *opts]) == -signal.SIGKILL
    assert main(["resume", SID, "--auto-approve", *opts]) == 0
    state = assert_consistent(root)
    assert state["status"] == "done"
    counts = started(root)
    assert counts["mvp-scope"] == reruns
    assert all(counts[s.slug] == 1 for s in STAGES if s.slug != "mvp-scope"), counts
    assert len(read_events(root, "gate_command")) >= 4


def test_kill_during_anchor_extraction_reruns_only_the_extraction(tmp_path):
    opts = _opts(tmp_path / "sessions")
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    argv = ["run", "--idea-file", str(idea), "--session-id", SID, *opts]
    assert in_killed_child(kill_in_model_call("anchor-extraction"), argv) == -signal.SIGKILL
    root = tmp_path / "sessions" / SID
    assert (root / "stages" / "01-idea-analysis" / "output.json").exists()
    assert main(["resume", SID, *opts]) == 0
    assert_consistent(root)
    counts = started(root)
    assert (counts["idea-analysis"], counts["anchor-extraction"]) == (1, 2)


def test_a_temp_file_left_by_a_killed_writer_is_cleaned_on_restart(session):
    root, opts = session
    stale = root / "stages" / "01-idea-analysis" / ".output.json.abc123.tmp"
    stale.write_text('{"half": ')
    assert main(["resume", SID, *opts]) == 0
    assert not stale.exists()
    assert_consistent(root)
