"""Disk full, read-only sessions folder, corrupted session files (issue 8).

Promise: a clear one-sentence error, nothing partial left behind (every JSON file parses, no
temp file, no torn event line), the last saved step kept, and after the cause is fixed the
session continues. A real tiny tmpfs is mounted where the tests run as root (else skipped);
the ENOSPC tests that monkeypatch the syscalls run everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from burr.core.persistence import SQLitePersister
from faults import assert_consistent, read_events
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import StorageError
from haytham.storage.folder import SessionFiles, atomic_write


def _opts(sessions: Path) -> list[str]:
    return ["--provider", "replay", "--cassette", str(POWER8_RUN), "--sessions-dir", str(sessions)]


def _at_gate_2(sessions: Path, sid: str = "disk") -> Path:
    assert sessions.name == "sessions"
    with make_service(replay_settings(sessions.parent)) as svc:
        svc.create_session(POWER8_IDEA, session_id=sid)
        assert svc.run(sid, auto_approve=True, until=2).gate == 2
    return sessions / sid


def _no_partial_files(root: Path) -> None:
    assert not list(root.rglob("*.tmp")), list(root.rglob("*.tmp"))
    for path in root.rglob("*.json"):
        json.loads(path.read_text("utf-8"))
    raw = (root / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    read_events(root)


# -- ENOSPC by syscall (portable) ---------------------------------------------------------------
def _fd_name(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "gates.json"
    target.write_text('{"old": true}\n')

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StorageError, match="the disk is full. Nothing partial was left behind"):
        atomic_write(target, '{"new": true}\n')
    assert target.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gates.json"]


def test_a_short_event_write_on_a_full_disk_is_rolled_back(tmp_path, monkeypatch):
    files = SessionFiles(tmp_path, "s")
    files.append_event("first", None)
    before = (tmp_path / "events.jsonl").read_bytes()
    real = os.write
    calls = []

    def short_then_full(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, data[: len(data) // 2])  # the disk filled up mid-line
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(StorageError, match="disk is full"):
        files.append_event("second", None, detail="x" * 200)
    monkeypatch.setattr(os, "write", real)
    assert (tmp_path / "events.jsonl").read_bytes() == before
    files.append_event("third", None)
    assert [e["type"] for e in files.events()] == ["first", "third"]


def test_a_torn_last_event_line_is_dropped_before_the_next_append(tmp_path):
    files = SessionFiles(tmp_path, "s")
    files.append_event("first", None)
    with (tmp_path / "events.jsonl").open("a") as fh:
        fh.write('{"ts": "2026-01-01", "type": "torn')  # power loss mid-line
    files.append_event("after", None)
    assert [e["type"] for e in files.events()] == ["first", "after"]


def test_disk_full_while_projecting_a_decision(tmp_path, monkeypatch, capsys):
    sessions = tmp_path / "sessions"
    root = _at_gate_2(sessions)
    real_fsync, real_save = os.fsync, SQLitePersister.save
    saved: list[str] = []

    def save(self, partition_key, app_id, sequence_id, position, *args, **kw):  # noqa: ANN001
        real_save(self, partition_key, app_id, sequence_id, position, *args, **kw)
        saved.append(position)

    def fsync(fd: int) -> None:  # the disk fills up once the decision is saved
        if "gate_2" in saved and ".gates.json." in _fd_name(fd):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(SQLitePersister, "save", save)
    monkeypatch.setattr(os, "fsync", fsync)
    assert main(["approve", "disk", "--gate", "2", *_opts(sessions)]) == 1
    err = capsys.readouterr().err
    assert "gates.json: the disk is full" in err and "haytham resume disk" in err
    assert "Traceback" not in err
    _no_partial_files(root)
    assert json.loads((root / "gates.json").read_text())["2"]["status"] == "open"  # old file
    monkeypatch.setattr(os, "fsync", real_fsync)  # space was freed
    assert main(["resume", "disk", *_opts(sessions)]) == 0  # the saved decision goes on
    assert "waiting at Gate 3" in capsys.readouterr().out
    state = assert_consistent(root)
    assert state["gates"]["2"]["status"] == "approved"


# -- a real tiny filesystem (root only) ----------------------------------------------------------
@pytest.fixture
def tmpfs(tmp_path):
    mount = tmp_path / "fs"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path, leave: int) -> Path:
    stats = os.statvfs(mount)
    free = stats.f_bavail * stats.f_frsize
    filler = mount / "filler"
    with filler.open("wb") as fh, contextlib.suppress(OSError):  # full already
        fh.write(b"\0" * max(0, free - leave))
    return filler


@pytest.mark.parametrize("leave", [0, 32 * 1024, 160 * 1024])
def test_a_really_full_disk_fails_clearly_and_resume_finishes(tmpfs, leave, capsys):
    sessions = tmpfs / "sessions"
    root = _at_gate_2(sessions)
    filler = _fill(tmpfs, leave)
    code = main(["approve", "disk", "--gate", "2", *_opts(sessions)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the disk is full" in err and "Traceback" not in err
    _no_partial_files(root)
    filler.unlink()
    assert main(["resume", "disk", "--auto-approve", *_opts(sessions)]) == 0
    assert assert_consistent(root)["status"] == "done"


@pytest.fixture
def read_only(tmp_path):
    """``read_only(folder)`` -> the same folder seen read-only: a read-only bind mount as root
    (root ignores permissions), else the folder itself with its write permissions removed."""
    undo: list[list[str]] = []

    def make(folder: Path) -> Path:
        if os.geteuid() != 0:
            subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
            undo.append(["chmod", "-R", "u+w", str(folder)])
            return folder
        view = tmp_path / "read-only-view"
        view.mkdir()
        for args in (["--bind", str(folder), str(view)], ["-o", "remount,bind,ro", str(view)]):
            done = subprocess.run(["mount", *args], capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()}")
            if not undo:
                undo.append(["umount", "-l", str(view)])
        return view

    yield make
    for command in undo:
        subprocess.run(command, capture_output=True)


def test_a_read_only_sessions_folder_fails_clearly_and_writes_nothing(tmp_path, read_only, capsys):
    root = _at_gate_2(tmp_path / "sessions")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    view = read_only(root.parent)
    opts = _opts(view)
    assert main(["approve", "disk", "--gate", "2", *opts]) == 1
    err = capsys.readouterr().err
    assert "the sessions folder is not writable" in err and "Traceback" not in err
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert main(["run", "--idea-file", str(idea), "--session-id", "new", *opts]) == 1
    assert "not writable" in capsys.readouterr().err
    assert not (view / "new").exists()
    assert main(["status", "disk", *opts]) == 0  # reading still works
    assert "waiting at Gate 2" in capsys.readouterr().out
    assert main(["export", "disk", "--format", "json", *opts]) == 0
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


# -- corrupted session files ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory) -> Path:
    sessions = tmp_path_factory.mktemp("corrupt") / "sessions"
    for sid in ("broken", "healthy"):
        _at_gate_2(sessions, sid)
    return sessions


@pytest.fixture
def sessions(two_sessions, tmp_path) -> Path:
    copy = tmp_path / "sessions"
    shutil.copytree(two_sessions, copy)
    return copy


def _truncate(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


def _version(number: int):
    def damage(path: Path) -> None:
        path.write_text(
            path.read_text().replace('"schema_version": 1', f'"schema_version": {number}')
        )

    return damage


PROJECTED = {  # files projected from the state: the next command that opens the session repairs
    "gates.json": (_truncate, "not valid JSON"),
    "concept_anchor.json": (_truncate, "not valid JSON"),
    "stages/05-mvp-scope/output.json": (_truncate, "not valid JSON"),
    "stages/02-market-context/output.json": (_version(7), "schema_version 7, expected 1"),
    "verifications/what.json": (lambda p: p.write_text("{"), "not valid JSON"),
}


def _broken_lines(out: str) -> list[str]:
    return [x for x in out.splitlines() if x.startswith("broken file:")]


def _healthy_still_works(sessions: Path, capsys) -> None:  # noqa: ANN001
    opts = _opts(sessions)
    capsys.readouterr()
    assert main(["sessions", *opts]) == 0
    assert capsys.readouterr().out.split() == ["broken", "healthy"]
    assert main(["status", "healthy", *opts]) == 0
    assert not _broken_lines(capsys.readouterr().out)
    assert main(["show", "healthy", "mvp-scope", *opts]) == 0
    assert main(["resume", "healthy", *opts]) == 0  # takes its lock, re-projects: unaffected
    assert_consistent(sessions / "healthy")


def test_status_names_each_broken_projected_file_and_resume_repairs_them(sessions, capsys):
    root = sessions / "broken"
    for rel, (damage, _) in PROJECTED.items():
        damage(root / rel)
    opts = _opts(sessions)
    capsys.readouterr()
    assert main(["status", "broken", *opts]) == 0
    out = capsys.readouterr().out
    assert "session broken: waiting at Gate 2" in out
    lines = _broken_lines(out)
    assert len(lines) == len(PROJECTED)
    for rel, (_, says) in PROJECTED.items():
        assert any(str(root / rel) in x and says in x for x in lines), (rel, lines)
    _healthy_still_works(sessions, capsys)
    assert main(["resume", "broken", *opts]) == 0
    assert_consistent(root)
    assert main(["status", "broken", *opts]) == 0
    assert not _broken_lines(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("rel", "damage", "says"),
    [
        ("session.json", _truncate, "not valid JSON"),
        ("session.json", _version(2), "schema_version 2, expected 1"),
        ("events.jsonl", lambda p: p.write_text("{bad\n" + p.read_text()), "line 1 is not JSON"),
    ],
)
def test_a_broken_record_file_is_named_by_status_and_by_resume(sessions, rel, damage, says, capsys):
    path = sessions / "broken" / rel
    damage(path)
    opts = _opts(sessions)
    capsys.readouterr()
    assert main(["status", "broken", *opts]) == 0
    out = capsys.readouterr().out
    assert "session broken: waiting at Gate 2" in out
    (line,) = _broken_lines(out)
    assert str(path) in line and says in line
    _healthy_still_works(sessions, capsys)
    if says.startswith("schema_version"):
        return
    assert main(["resume", "broken", *opts]) == 1
    err = capsys.readouterr().err
    assert f"{path} is unreadable" in err and "Traceback" not in err


def test_a_corrupt_state_db_is_named_and_other_sessions_keep_working(sessions, capsys):
    (sessions / "broken" / "state.db").write_bytes(b"this is not a database" * 100)
    opts = _opts(sessions)
    assert main(["status", "broken", *opts]) == 1
    assert f"{sessions / 'broken' / 'state.db'} is unreadable" in capsys.readouterr().err
    assert main(["resume", "broken", *opts]) == 1
    assert "state.db is unreadable" in capsys.readouterr().err
    assert main(["status", "healthy", *opts]) == 0
    assert main(["resume", "healthy", "--auto-approve", *opts]) == 0
    assert assert_consistent(sessions / "healthy")["status"] == "done"
