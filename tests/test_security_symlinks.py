"""Writes through symlinks (issue 15): no command reads or writes a session file through a
symbolic link, and ``haytham validate`` refuses a linked session folder, linked files in it and
malformed targets the way every other command does: exit 2, one sentence, no traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import InputError
from haytham.storage.folder import SessionStore

SID = "linked"
OUTPUT = "stages/01-idea-analysis/output.json"
PRECIOUS = b"precious bytes that live outside the session\n"
LINKED_FILES = (
    ".lock",
    "events.jsonl",
    "state.db",
    "gates.json",
    "session.json",
    OUTPUT,
    "summary.json",
)
WRITERS = {
    "resume": ["resume", SID, "--quiet"],
    "approve": ["approve", SID, "--gate", "1", "--quiet"],
    "clear-from": ["clear-from", SID, "idea-analysis"],
    "fork": ["fork", SID, "--from", "mvp-scope", "--session-id", "forked"],
}
# `status` writes nothing, but it opens these itself (the others through status.py's reader)
STATUS_READS = (".lock", "events.jsonl", "state.db")


def _tree(root: Path) -> dict[str, bytes]:
    """Every regular file in the session (links and the lock file left out) and its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and p.name != ".lock"
    }


@pytest.fixture(scope="module")
def gate_1(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("gate1")
    with make_service(replay_settings(base)) as svc:
        svc.create_session(POWER8_IDEA, session_id=SID)
        assert svc.run(SID).gate == 1
        for amb in svc.status(SID)["open_ambiguities"]:  # so `approve` really writes
            svc.clarify(SID, amb["invariant"], "1")
        assert not svc.status(SID)["open_ambiguities"]
    root = base / "sessions" / SID
    (root / ".lock").touch()
    return root


@pytest.fixture
def session(gate_1, tmp_path) -> Path:
    root = tmp_path / "sessions" / SID
    shutil.copytree(gate_1, root)
    return root


def _plant(session: Path, rel: str, tmp_path: Path) -> Path:
    """Replace ``rel`` in the session by a symlink to an outside file; return that file."""
    outside = tmp_path / "outside.txt"
    outside.write_bytes(PRECIOUS)
    link = session / rel
    assert link.exists(), f"the fixture session has no {rel}"
    link.unlink()
    link.symlink_to(outside)
    return outside


def _refused_in_one_sentence(err: str, rel: str) -> None:
    assert "Traceback" not in err
    line = err.strip()
    assert "\n" not in line, err
    assert line == (
        f"error: Session file {rel} in session {SID} is a symbolic link; refusing to follow it, "
        "so nothing was read or written through it."
    )


@pytest.mark.parametrize("command", sorted(WRITERS))
@pytest.mark.parametrize("rel", LINKED_FILES)
def test_a_writing_command_refuses_a_symlinked_session_file_and_writes_nothing(
    session, tmp_path, capsys, rel, command
):
    outside = _plant(session, rel, tmp_path)
    before = _tree(session)
    assert main([*WRITERS[command], *replay_cli_args(tmp_path)]) == 2
    _refused_in_one_sentence(capsys.readouterr().err, rel)
    assert outside.read_bytes() == PRECIOUS  # nothing written through the link
    assert (session / rel).is_symlink()  # nor the link replaced by a rename
    assert _tree(session) == before  # nor anything else in the session
    assert not (tmp_path / "sessions" / "forked").exists()


@pytest.mark.parametrize("rel", STATUS_READS)
def test_status_refuses_a_symlinked_lock_event_log_or_state_db(session, tmp_path, capsys, rel):
    outside = _plant(session, rel, tmp_path)
    assert main(["status", SID, *replay_cli_args(tmp_path)]) == 2
    _refused_in_one_sentence(capsys.readouterr().err, rel)
    assert outside.read_bytes() == PRECIOUS


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_symlinked_sqlite_journal_is_refused_before_sqlite_opens_the_database(
    session, tmp_path, capsys, suffix
):
    rel = f"state.db{suffix}"
    outside = tmp_path / "outside.txt"
    outside.write_bytes(PRECIOUS)
    (session / rel).symlink_to(outside)
    assert main(["status", SID, *replay_cli_args(tmp_path)]) == 2  # status never takes the lock
    _refused_in_one_sentence(capsys.readouterr().err, rel)
    assert outside.read_bytes() == PRECIOUS
    with pytest.raises(InputError, match="symbolic link"):
        _ = SessionStore(tmp_path / "sessions").open(SID).state_db


def test_a_link_planted_while_a_file_is_written_is_not_replaced(session, tmp_path, monkeypatch):
    """The target is checked again just before the rename: a link that appeared while the temp
    file was written is refused, kept, and the temp file removed."""
    files = SessionStore(tmp_path / "sessions").open(SID)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(PRECIOUS)
    real_fsync = os.fsync

    def fsync_then_plant(fd: int) -> None:
        real_fsync(fd)
        (session / "gates.json").unlink()
        (session / "gates.json").symlink_to(outside)

    monkeypatch.setattr(os, "fsync", fsync_then_plant)
    with pytest.raises(InputError, match="gates.json in session linked is a symbolic link"):
        files.write_json("gates.json", {"1": {"decision": "approved"}})
    assert outside.read_bytes() == PRECIOUS
    assert (session / "gates.json").is_symlink()
    assert not list(session.glob(".gates.json.*"))  # no temp file left behind


# -- haytham validate -----------------------------------------------------------------------------
def test_validate_refuses_a_symlinked_session_folder_by_id_and_by_path(session, tmp_path, capsys):
    real = tmp_path / "elsewhere"
    shutil.move(str(session), real)
    session.symlink_to(real, target_is_directory=True)
    assert main(["validate", SID, *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"Session '{SID}' is a symbolic link; refusing to follow it."
    assert main(["validate", str(session), *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"Session folder {session} is a symbolic link; refusing to follow it."
    assert main(["validate", str(real), *replay_cli_args(tmp_path)]) == 0  # the real folder is fine


@pytest.mark.parametrize("rel", [OUTPUT, "events.jsonl", "idea.md"])
def test_validate_refuses_a_symlinked_file_in_the_session(session, tmp_path, capsys, rel):
    copy = tmp_path / "outside-copy"
    shutil.copyfile(session / rel, copy)  # a valid file: following the link would succeed
    (session / rel).unlink()
    (session / rel).symlink_to(copy)
    assert main(["validate", SID, *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == (
        f"Session file {rel} in session {SID} is a symbolic link; refusing to follow it, "
        "so nothing was read or written through it."
    )


def test_validate_refuses_a_symlinked_stages_folder(session, tmp_path, capsys):
    real = tmp_path / "stages-elsewhere"
    shutil.move(str(session / "stages"), real)
    (session / "stages").symlink_to(real, target_is_directory=True)
    assert main(["validate", SID, *replay_cli_args(tmp_path)]) == 2
    assert "Session file stages in session linked is a symbolic link" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("x" * 10_000, "it is longer than a path can be."),
        ("x" * 300, "File name too long."),
        ("abc\x00def", "it holds a NUL byte."),
        (f"{'d' * 300}/idea", "File name too long."),
    ],
    ids=["10000-chars", "300-chars", "nul", "long-path"],
)
def test_validate_refuses_a_malformed_target_in_one_sentence(tmp_path, capsys, target, message):
    (tmp_path / "sessions").mkdir()
    assert main(["validate", target, *replay_cli_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected" not in err
    assert err.count("\n") == 1 and err.strip().endswith(message)
    assert len(err) < 300  # the target is not echoed back whole
