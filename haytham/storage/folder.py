"""The session folder (a public contract other tools read) and safe access to it: the default
implementation of :class:`haytham.storage.protocol.Session` and :class:`haytham.storage.protocol.Store`.

Every path is derived from a validated session id and checked to stay inside the sessions
folder before any file is touched. JSON and text writes are atomic (temp file + fsync + rename),
``events.jsonl`` is append-only, and a per-session ``flock`` keeps two processes from working on
one session at once.

No session file is opened through a symbolic link: reads, appends, the lock file and the temp
files of atomic writes are opened with ``O_NOFOLLOW``, a rename never replaces a symlink, and
``state.db`` (opened by SQLite) is checked before its path is handed out. A symlinked file is
refused with one sentence naming it; nothing is read or written through it.
"""

from __future__ import annotations

import builtins  # `builtins.list` in annotations: the sessions have a method named `list`
import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from burr.core.persistence import SQLitePersister
from typing_extensions import override

from haytham.errors import (
    HaythamError,
    InputError,
    SessionCorrupt,
    SessionLocked,
    SessionNotFound,
    StorageError,
)
from haytham.schemas.events import Event
from haytham.storage.protocol import (
    PARTITION,
    SESSION_ID,
    TABLE,
    Session,
    StateRow,
    Store,
    event_line,
    parse_json,
    row_inserts,
    state_query,
    state_row,
    validate_session_id,
)

SCHEMA_VERSION = 1
TMP_SUFFIX = ".tmp"
AUDIT_DIR = "_audit"  # the decision record (not a valid session id, so never listed)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
SQLITE_FILES = ("state.db", "state.db-journal", "state.db-wal", "state.db-shm")
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def sqlite_persister(db_path: str) -> SQLitePersister:
    """Burr's SQLite persister for one session's ``state.db`` (its table made if missing)."""
    made = SQLitePersister(
        db_path=db_path, table_name=TABLE, connect_kwargs={"check_same_thread": False}
    )
    made.initialize()
    return made


def storage_error(path: Path, exc: OSError) -> StorageError:
    """A failed write of ``path`` as one sentence for the user: a full disk, a read-only folder,
    or the OS's own words."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        why = "the sessions folder is not writable"
    else:
        why = exc.strerror or str(exc)
    return StorageError(f"Could not write {path}: {why}. Nothing partial was left behind.")


def link_refused(shown: str) -> InputError:
    """The one sentence for a session file (``shown``) that is a symbolic link."""
    return InputError(
        f"{shown} is a symbolic link; refusing to follow it, so nothing was read or "
        "written through it."
    )


def _refuse_link(path: Path, shown: str | None) -> None:
    if os.path.islink(path):
        raise link_refused(shown or str(path))


def _temp_file(path: Path) -> tuple[int, str]:
    """A new temp file beside ``path``, created exclusively and never through a symlink."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}{TMP_SUFFIX}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(path.parent))


def read_capped(path: Path, limit: int) -> bytes | None:
    """The bytes of the file at ``path`` when it holds at most ``limit`` of them, else ``None``;
    never reads more than ``limit + 1`` bytes, so a huge or endless file costs nothing.

    Raises:
        OSError: the file cannot be opened or read.
    """
    with Path(path).open("rb") as fh:
        raw = fh.read(limit + 1)
    return None if len(raw) > limit else raw


def write_synced(fd: int, text: str | bytes) -> None:
    """Write ``text`` (UTF-8, or bytes as they are) to the open file ``fd``, close it, and make
    it durable (fsync)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write(path: Path, text: str, *, shown: str | None = None) -> None:
    """Write ``text`` to ``path`` so readers see the old or the new file, never a mix.

    A ``path`` that is a symbolic link is refused (``shown`` names it in the message) before
    anything is created, and checked again before the rename, which would replace the link.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _refuse_link(path, shown)
        fd, tmp = _temp_file(path)
    except OSError as exc:  # read-only folder, disk full: nothing was created
        raise storage_error(path, exc) from None
    try:
        write_synced(fd, text)
        _refuse_link(path, shown)  # planted while we wrote: keep the link, drop the temp file
        os.replace(tmp, path)
    except (OSError, InputError) as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, InputError):
            raise
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


class SessionFiles(Session):
    """One session folder."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.session_id = session_id

    # -- paths -------------------------------------------------------------------------------
    @property
    def state_db(self) -> Path:
        """``state.db``, for SQLite; refused if it or its journal is a symbolic link."""
        return self.checked_state_db()

    def checked_state_db(self) -> Path:
        """``state.db``'s path once neither it nor its journal / WAL files is a symlink (SQLite
        opens them itself, following links, so they are checked before the path is handed out)."""
        path = self.inside("state.db")
        for name in SQLITE_FILES:
            _refuse_link(self.root / name, self.shown(name))
        return path

    @override
    def shown(self, rel: str) -> str:
        """How a message names the session file ``rel``."""
        return f"Session file {rel} in session {self.session_id}"

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

    def check_links(self) -> None:
        """Refuse the session if any file in it is a symbolic link, or a linked folder leads
        outside it; writing commands call this (through :meth:`lock`) before writing anything."""
        base = self.root.resolve()
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in filenames:  # files and links to non-folders (dangling ones included)
                path = Path(dirpath, name)
                if path.is_symlink():
                    raise link_refused(self.shown(path.relative_to(self.root).as_posix()))
            for name in dirnames:  # os.walk does not descend into linked folders
                path = Path(dirpath, name)
                if path.is_symlink() and not path.resolve().is_relative_to(base):
                    raise InputError(
                        f"{path} resolves outside session {self.session_id} (a symbolic "
                        "link?); refusing to touch it."
                    )

    def open_fd(self, rel: str, flags: int, mode: int = 0o600) -> int:
        """``os.open`` of the session file ``rel`` that never follows a symbolic link.

        Raises:
            InputError: ``rel`` is a symbolic link (or a linked folder leads outside).
            SessionCorrupt: ``rel`` is not a regular file (a folder, a FIFO…).
            OSError: anything else (``FileNotFoundError`` for a missing file).
        """
        path = self.inside(rel)
        try:
            fd = os.open(path, flags | NOFOLLOW | os.O_NONBLOCK, mode)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
                raise link_refused(self.shown(rel)) from None
            if exc.errno == errno.EISDIR:
                raise SessionCorrupt(str(path), "it is a folder, not a file") from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SessionCorrupt(str(path), "it is not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read(self, rel: str) -> bytes | None:
        """The bytes of ``rel`` (``None`` if it does not exist), never through a symlink."""
        try:
            fd = self.open_fd(rel, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SessionCorrupt(str(self.root / rel), exc.strerror or str(exc)) from None
        try:
            with os.fdopen(fd, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise SessionCorrupt(str(self.root / rel), exc.strerror or str(exc)) from None

    # -- io ----------------------------------------------------------------------------------
    @override
    def write_json(self, rel: str, data: Any) -> None:
        self.write_text(rel, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    @override
    def write_text(self, rel: str, text: str) -> None:
        atomic_write(self.inside(rel), text, shown=self.shown(rel))

    @override
    def read_json(self, rel: str, default: Any = None) -> Any:
        raw = self._read(rel)
        if raw is None:
            return default
        try:
            return parse_json(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise SessionCorrupt(str(self.root / rel), f"not valid JSON ({exc})") from None

    @override
    def read_text(self, rel: str, default: str = "") -> str:
        raw = self._read(rel)
        if raw is None:
            return default
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SessionCorrupt(str(self.root / rel), str(exc)) from None

    @override
    def remove(self, rel: str) -> None:
        target = self.inside(rel)
        if target.is_symlink():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    @override
    def exists(self, rel: str) -> bool:
        """Whether the session file or folder ``rel`` exists (a symlink counts as existing)."""
        path = self.root / rel
        return path.exists() or path.is_symlink()

    @override
    def list(self, folder: str) -> builtins.list[str]:
        """The ``*.json`` files directly in ``folder``, as session-relative paths, sorted."""
        path = self.root / folder
        if not path.is_dir():
            return []
        return sorted(f"{folder}/{p.name}" for p in path.glob("*.json"))

    @override
    def where(self, rel: str) -> str:
        """Where the session file ``rel`` lives, for messages."""
        return str(self.root / rel)

    @override
    def all_files(self) -> dict[str, str]:
        """Every file of the session (relative path -> text), the event log, the lock and
        ``state.db`` aside; read through the same no-link checks as every read."""
        skip = {"events.jsonl", ".lock", *SQLITE_FILES}
        out: dict[str, str] = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if path.is_file() and rel not in skip and not path.name.endswith(TMP_SUFFIX):
                out[rel] = self.read_text(rel)
        return out

    @override
    def tidy(self) -> None:
        """Remove temp files of writers that died before their rename (call under the lock)."""
        remove_stale_temp_files(self.root)

    @property
    @override
    def state_label(self) -> str:
        """How messages name where the Burr state lives."""
        return str(self.root / "state.db")

    @override
    def write_rows(self, rows: builtins.list[StateRow]) -> None:
        """Insert persisted steps as they are (an import keeps their times)."""
        sqlite_persister(str(self.state_db))  # makes the table
        conn = sqlite3.connect(str(self.state_db))
        try:
            with conn:
                conn.executemany(*row_inserts("?", self.session_id, rows))
        finally:
            conn.close()

    @override
    def storage_failure(self, exc: Exception) -> HaythamError | None:
        """What a failed write of SQLite or Burr's tracker means, in one sentence (``None``:
        not a storage failure)."""
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc)
            why = (
                "the disk is full"
                if "full" in text
                else "the sessions folder is not writable"
                if "readonly" in text or "read-only" in text
                else text
            )
            return StorageError(
                f"Could not write {self.state_label}: {why}. The last saved step is kept; free "
                f"space or fix permissions, then `haytham resume {self.session_id}`."
            )
        if isinstance(exc, sqlite3.DatabaseError):  # not a database any more (truncated…)
            return SessionCorrupt(self.state_label, str(exc))
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            where = Path(exc.filename) if exc.filename else self.root.parent  # Burr tracking
            return storage_error(where, exc)
        return None

    @override
    def persister(self) -> SQLitePersister:
        """Burr's persister for this session's state (``state.db``)."""
        return sqlite_persister(str(self.state_db))

    @override
    def state_rows(
        self, *, mine: bool = True, latest: bool = False, completed: bool = False
    ) -> builtins.list[StateRow]:
        """Persisted steps read straight from ``state.db`` (never created here, so reading a
        damaged session writes nothing): this session's (``mine``) or the latest of another id
        (a copied folder); all of them oldest first, or only the ``latest``.

        Raises:
            SessionCorrupt: ``state.db`` is not a readable database.
        """
        path = self.state_db
        if not path.is_file():
            return []
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                known = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,)
                ).fetchone()
                if known is None:
                    return []
                query = state_query("?", mine=mine, latest=latest, completed=completed)
                raw = conn.execute(query, (PARTITION, self.session_id)).fetchall()
            finally:
                conn.close()
            return [state_row(r) for r in raw]
        except (sqlite3.Error, ValueError, TypeError) as exc:
            raise SessionCorrupt(str(path), str(exc)) from None

    @override
    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event:
        """Append one event; its text is redacted first (provider errors echo credentials)."""
        event, line = event_line(type_, stage, data)
        self.append_lines([line])
        return event

    @override
    def append_lines(self, lines: builtins.list[str]) -> None:
        """Append event lines as they are (an import)."""
        path = self.root / "events.jsonl"
        try:
            fd = self.open_fd("events.jsonl", os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _append_all(fd, "".join(f"{line}\n" for line in lines).encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            raise storage_error(path, exc) from None

    @override
    def event_lines(self) -> builtins.list[str]:
        """The event log's lines as written (blank lines left out)."""
        raw = self._read("events.jsonl")
        text = "" if raw is None else raw.decode("utf-8", errors="replace")
        return [line for line in text.splitlines() if line.strip()]

    @override
    def events(self) -> builtins.list[dict[str, Any]]:
        path = self.root / "events.jsonl"
        raw = self._read("events.jsonl")
        if raw is None:
            return []
        lines = raw.decode("utf-8", errors="replace").splitlines()
        out = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(parse_json(line))
            except json.JSONDecodeError:
                # A torn last line after a crash is skipped; anything earlier is corruption.
                if n < len(lines):
                    raise SessionCorrupt(str(path), f"line {n} is not JSON") from None
        return out

    @override
    def updated_at(self) -> str:
        """When the session last changed (its event log, else its folder), ISO 8601 UTC."""
        path = self.root / "events.jsonl"
        stamp = (path if path.exists() and not path.is_symlink() else self.root).stat().st_mtime
        return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")

    @override
    def is_busy(self) -> bool:
        """Whether some process holds this session's lock right now (never blocks)."""
        try:
            fd = self.open_fd(".lock", os.O_RDONLY)
        except (OSError, SessionCorrupt):  # missing, or not a file: nobody can hold it
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @contextlib.contextmanager
    @override
    def lock(self, *, check_links: bool = True) -> Iterator[None]:
        """Exclusive, non-blocking; released by the OS if the process dies.

        Once held, the session is checked for symbolic links (:meth:`check_links`), so a
        writing command refuses a planted link before it writes anything.
        """
        path = self.root / ".lock"
        try:
            fd = self.open_fd(".lock", os.O_RDWR | os.O_CREAT, 0o644)
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
            if check_links:
                self.check_links()
            yield
        finally:
            os.close(fd)


class SessionStore(Store):
    """The sessions folder: create, open, list and delete session folders safely."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    @override
    def location(self) -> str:
        return str(self.root)

    @property
    @override
    def tracking_dir(self) -> Path:
        """Burr's tracking folder (not a valid session id, so never listed as a session)."""
        return self.root / "_tracking"

    @override
    def close(self) -> None:
        """Nothing to release: every file is closed after each use."""

    def _path(self, session_id: str) -> Path:
        validate_session_id(session_id)
        base = self.root.resolve()
        path = base / session_id
        if path.is_symlink():
            raise InputError(f"Session {session_id} is a symbolic link; refusing to follow it.")
        if path.resolve().parent != base:
            raise InputError(f"Session {session_id} resolves outside the sessions folder.")
        return path

    @override
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

    @override
    def open(self, session_id: str) -> SessionFiles:
        path = self._path(session_id)
        if not path.is_dir():
            raise SessionNotFound(f"No session {session_id} in {self.root}.")
        return SessionFiles(path, session_id)

    @override
    def exists(self, session_id: str) -> bool:
        return self._path(session_id).is_dir()

    @override
    def list_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.is_symlink() and SESSION_ID.fullmatch(p.name)
        )

    @override
    def delete(self, session_id: str) -> None:
        files = self.open(session_id)
        with files.lock(check_links=False):  # rmtree removes links, never what they point to
            shutil.rmtree(files.root)

    # -- the decision record (haytham/people/audit.py): append-only, outside every session ----------
    @override
    def append_audit(self, line: str, session_id: str, actor: str) -> None:  # noqa: ARG002
        """Append one decision line to ``_audit/decisions.jsonl`` (never through a link)."""
        folder = self.root / AUDIT_DIR
        path = folder / "decisions.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _refuse_link(folder, str(folder))
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # one writer at a time across processes
                _append_all(fd, f"{line}\n".encode())
            finally:
                os.close(fd)
        except OSError as exc:
            raise storage_error(path, exc) from None

    @override
    def audit_lines(self, session_id: str | None, actor: str | None) -> list[str]:
        """The decision lines, oldest first, of ``session_id`` and/or ``actor`` (None: all)."""
        path = self.root / AUDIT_DIR / "decisions.jsonl"
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SessionCorrupt(str(path), exc.strerror or str(exc)) from None
        with os.fdopen(fd, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
        found = []
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if session_id is not None and data.get("session_id") != session_id:
                continue
            if actor is not None and str(data.get("actor", "")).lower() != actor.lower():
                continue
            found.append(line)
        return found
