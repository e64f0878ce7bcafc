"""The session folder (a public contract other tools read) and safe access to it.

Every path is derived from a validated session id and checked to stay inside the sessions
folder before any file is touched. JSON and text writes are atomic (temp file + fsync + rename),
``events.jsonl`` is append-only, and a per-session ``flock`` keeps two processes from working on
one session at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haytham.errors import (
    InputError,
    SessionCorrupt,
    SessionLocked,
    SessionNotFound,
    StorageError,
)
from haytham.schemas.events import Event

SESSION_ID = re.compile(r"^[a-z0-9-]{1,64}$")
SCHEMA_VERSION = 1
TMP_SUFFIX = ".tmp"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def validate_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
        shown = (
            session_id if isinstance(session_id, str) and len(session_id) <= 80 else "(too long)"
        )
        raise InputError(
            f"Invalid session id {shown!r}: use 1-64 characters from a-z, 0-9 and '-'."
        )
    return session_id


def new_session_id(idea: str) -> str:
    words = re.findall(r"[a-z0-9]+", idea.lower())[:4]
    stem = "-".join(words)[:40].strip("-") or "idea"
    return f"{stem}-{secrets.token_hex(3)}"


def storage_error(path: Path, exc: OSError) -> StorageError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        why = "the sessions folder is not writable"
    else:
        why = exc.strerror or str(exc)
    return StorageError(f"Could not write {path}: {why}. Nothing partial was left behind.")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old or the new file, never a mix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    except OSError as exc:  # read-only folder, disk full: nothing was created
        raise storage_error(path, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise storage_error(path, exc) from None


def remove_stale_temp_files(root: Path) -> list[Path]:
    """Delete temp files of writers that died before their rename (call under the lock)."""
    stale = [p for p in root.rglob(f".*{TMP_SUFFIX}") if p.is_file() and not p.is_symlink()]
    for path in stale:
        with contextlib.suppress(OSError):
            path.unlink()
    return stale


def _append_all(fd: int, data: bytes) -> None:
    """Append ``data`` whole or not at all: a short write (disk full) is rolled back."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        # a torn last line (power loss) was never committed: drop it before appending
        tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
        if b"\n" in tail or len(tail) == size:
            size = size - len(tail) + tail.rfind(b"\n") + 1
            os.ftruncate(fd, size)
        else:  # a torn line longer than the tail we read: keep it, on a line of its own
            data = b"\n" + data
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, data[written:])
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise


def _try_lock(fd: int, tries: int = 5, pause: float = 0.01) -> bool:
    """Take the exclusive lock without waiting for a real holder. ``is_busy`` peeks with a
    shared lock held for microseconds; a few short retries keep a reader's peek from
    refusing a writer."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < tries:
                time.sleep(pause)
    return False


class SessionFiles:
    """One session folder."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.session_id = session_id

    # -- paths -------------------------------------------------------------------------------
    @property
    def state_db(self) -> Path:
        return self.root / "state.db"

    def stage_dir(self, dir_name: str) -> Path:
        return self.root / "stages" / dir_name

    def inside(self, rel: str) -> Path:
        """``root / rel``, refused if a symlinked folder would take it outside the session."""
        path = self.root / rel
        base = self.root.resolve()
        if not path.parent.resolve().is_relative_to(base):
            raise InputError(
                f"{path} resolves outside session {self.session_id} (a symbolic "
                "link?); refusing to touch it."
            )
        return path

    # -- io ----------------------------------------------------------------------------------
    def write_json(self, rel: str, data: Any) -> None:
        self.write_text(rel, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def write_text(self, rel: str, text: str) -> None:
        atomic_write(self.inside(rel), text)

    def read_json(self, rel: str, default: Any = None) -> Any:
        path = self.root / rel
        if not path.exists():
            return default
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SessionCorrupt(str(path), f"not valid JSON ({exc})") from None
        except OSError as exc:
            raise SessionCorrupt(str(path), exc.strerror or str(exc)) from None

    def read_text(self, rel: str, default: str = "") -> str:
        path = self.root / rel
        try:
            return path.read_text(encoding="utf-8") if path.exists() else default
        except (OSError, UnicodeDecodeError) as exc:
            raise SessionCorrupt(str(path), str(exc)) from None

    def remove(self, rel: str) -> None:
        target = self.inside(rel)
        if target.is_symlink():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event:
        event = Event(ts=now(), type=type_, stage=stage, data=data)
        line = event.model_dump_json() + "\n"
        path = self.root / "events.jsonl"
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _append_all(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            raise storage_error(path, exc) from None
        return event

    def events(self) -> list[dict[str, Any]]:
        path = self.root / "events.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        out = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                # A torn last line after a crash is skipped; anything earlier is corruption.
                if n < len(lines):
                    raise SessionCorrupt(str(path), f"line {n} is not JSON") from None
        return out

    def updated_at(self) -> str:
        """When the session last changed (its event log, else its folder), ISO 8601 UTC."""
        path = self.root / "events.jsonl"
        stamp = (path if path.exists() else self.root).stat().st_mtime
        return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")

    def is_busy(self) -> bool:
        """Whether some process holds this session's lock right now (never blocks)."""
        path = self.root / ".lock"
        if not path.exists():
            return False
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive, non-blocking; released by the OS if the process dies."""
        path = self.root / ".lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise storage_error(path, exc) from None
        try:
            if not _try_lock(fd):
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                raise SessionLocked(
                    f"Session {self.session_id} is busy in another process (pid {holder}); "
                    "wait for it to finish, then try again."
                ) from None
            with contextlib.suppress(OSError):  # the pid is informative; a full disk is not fatal
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)


class SessionStore:
    """The sessions folder: create, open, list and delete session folders safely."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, session_id: str) -> Path:
        validate_session_id(session_id)
        base = self.root.resolve()
        path = base / session_id
        if path.is_symlink():
            raise InputError(f"Session {session_id} is a symbolic link; refusing to follow it.")
        if path.resolve().parent != base:
            raise InputError(f"Session {session_id} resolves outside the sessions folder.")
        return path

    def create(self, session_id: str) -> SessionFiles:
        path = self._path(session_id)
        if path.exists():
            raise InputError(f"Session {session_id} already exists; choose another id.")
        try:
            path.mkdir(parents=True)
        except FileExistsError:  # created by another process since the check above
            raise InputError(f"Session {session_id} already exists; choose another id.") from None
        except OSError as exc:
            raise storage_error(path, exc) from None
        return SessionFiles(path, session_id)

    def open(self, session_id: str) -> SessionFiles:
        path = self._path(session_id)
        if not path.is_dir():
            raise SessionNotFound(f"No session {session_id} in {self.root}.")
        return SessionFiles(path, session_id)

    def exists(self, session_id: str) -> bool:
        return self._path(session_id).is_dir()

    def list_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.is_symlink() and SESSION_ID.fullmatch(p.name)
        )

    def delete(self, session_id: str) -> None:
        files = self.open(session_id)
        with files.lock():
            shutil.rmtree(files.root)
