"""The shared store: sessions in PostgreSQL, for a team deployment (``HAYTHAM_DATABASE_URL``).

It keeps the session folder's contract (:mod:`haytham.store`) with the same content: each file
of the folder is a row of ``haytham_files`` (session id, relative path, text), the event log is
``haytham_events`` (one row per line, as written), and Burr's state is in the table of Burr's
own PostgreSQL persister (``burr_state``). Everything that reads or writes a session goes
through the same methods for either store, so export, validate, status and the UI work on both.

The per-session lock is a PostgreSQL advisory lock held on a connection of its own for as long
as the command runs: one writer at a time across every machine, and the server releases it when
the holder's process dies (its connection closes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import psycopg2
import psycopg2.errors
import psycopg2.extensions
import psycopg2.pool
from burr.integrations.persisters.b_psycopg2 import PostgreSQLPersister

from haytham.errors import (
    HaythamError,
    InputError,
    SessionCorrupt,
    SessionLocked,
    SessionNotFound,
    StorageError,
)
from haytham.schemas.events import Event
from haytham.storage import (
    PARTITION,
    TABLE,
    StateRow,
    event_line,
    parse_json,
    row_inserts,
    state_query,
    state_row,
    validate_session_id,
)

SCHEMA_VERSION = 1
MAX_POOLED = 16  # pooled connections per process (locks and Burr persisters have their own)
POOL_WAIT_S = 30.0  # how long a query waits for a pooled connection before giving up
# A machine that vanishes (power, network) holds its session locks until the server notices its
# connection is gone: TCP keepalives on both ends make that about 30 s instead of hours.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "options": "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3",
}
# Each migration runs once, in order, inside one transaction, under a transaction-level advisory
# lock, so app instances and workers that start together never race on the schema.
MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE IF NOT EXISTS haytham_sessions (
        session_id TEXT PRIMARY KEY,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS haytham_files (
        session_id TEXT NOT NULL REFERENCES haytham_sessions ON DELETE CASCADE,
        path TEXT NOT NULL,
        content TEXT NOT NULL,
        PRIMARY KEY (session_id, path)
    );
    CREATE TABLE IF NOT EXISTS haytham_events (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES haytham_sessions ON DELETE CASCADE,
        line TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS haytham_events_session ON haytham_events (session_id, id);
    CREATE TABLE IF NOT EXISTS {TABLE} (
        partition_key TEXT DEFAULT '{PARTITION}',
        app_id TEXT NOT NULL,
        sequence_id INTEGER NOT NULL,
        position TEXT NOT NULL,
        status TEXT NOT NULL,
        state JSONB NOT NULL,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (partition_key, app_id, sequence_id, position)
    );
    CREATE INDEX IF NOT EXISTS {TABLE}_created_at_index ON {TABLE} (created_at);
    """,
    # the decision record (haytham/audit.py): no foreign key, so a deleted session's record
    # stays; the rules make it append-only (an UPDATE or DELETE changes nothing)
    """
    CREATE TABLE IF NOT EXISTS haytham_audit (
        id BIGSERIAL PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL DEFAULT now(),
        session_id TEXT NOT NULL,
        actor TEXT NOT NULL,
        line TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS haytham_audit_session ON haytham_audit (session_id, id);
    CREATE INDEX IF NOT EXISTS haytham_audit_actor ON haytham_audit (lower(actor), id);
    CREATE OR REPLACE RULE haytham_audit_no_update AS ON UPDATE TO haytham_audit DO INSTEAD NOTHING;
    CREATE OR REPLACE RULE haytham_audit_no_delete AS ON DELETE TO haytham_audit DO INSTEAD NOTHING;
    """,
)
_MIGRATION_LOCK = 0x48415954  # "HAYT": the advisory key migrations serialise on


def where(url: str) -> str:
    """The database a URL names, for messages: ``host:port/dbname``, never the password."""
    try:
        parts = psycopg2.extensions.parse_dsn(url)
    except psycopg2.ProgrammingError:
        return "the database HAYTHAM_DATABASE_URL names"
    host = parts.get("host") or "localhost"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or '?'}"


def lock_key(session_id: str) -> tuple[int, int]:
    """The advisory lock of a session as PostgreSQL's two 32-bit keys (a stable 64-bit hash)."""
    digest = hashlib.blake2b(f"haytham:{session_id}".encode(), digest_size=8).digest()
    high, low = int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:], "big")
    return high - (1 << 32) * (high >= 1 << 31), low - (1 << 32) * (low >= 1 << 31)


class Database:
    """Connections to the shared database: a small thread-safe pool for short queries, and
    dedicated connections for locks and Burr's persisters. Built once per process."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = where(url)
        # who holds a lock, in "busy" messages (PostgreSQL keeps 63 characters: pid first)
        self._name = f"haytham pid {os.getpid()} on {socket.gethostname()}"[:63]
        self._guard = threading.Lock()
        self._free = threading.BoundedSemaphore(MAX_POOLED)  # threads wait for a connection
        self._pool: psycopg2.pool.ThreadedConnectionPool | None = None

    def unreachable(self, exc: Exception) -> StorageError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StorageError(
            f"Could not use the shared database {self.where}: {first}. Check "
            "HAYTHAM_DATABASE_URL and that PostgreSQL is running (`make services` starts one "
            "on this machine); nothing was changed."
        )

    def connect(self) -> psycopg2.extensions.connection:
        """A new connection of its own (closing it releases what it holds)."""
        try:
            return psycopg2.connect(
                self.url, application_name=self._name, connect_timeout=10, **KEEPALIVES
            )
        except psycopg2.Error as exc:
            raise self.unreachable(exc) from None

    def _get(self) -> tuple[psycopg2.pool.ThreadedConnectionPool, Any]:
        """A pooled connection (and its pool), waiting while all of them are in use."""
        if not self._free.acquire(timeout=POOL_WAIT_S):
            raise StorageError(
                f"Every connection to the shared database {self.where} stayed busy for "
                f"{POOL_WAIT_S:.0f} s; nothing was changed. Try again."
            )
        try:
            with self._guard:
                if self._pool is None:
                    self._pool = psycopg2.pool.ThreadedConnectionPool(
                        0,
                        MAX_POOLED,
                        self.url,
                        application_name=self._name,
                        connect_timeout=10,
                        **KEEPALIVES,
                    )
                pool = self._pool
            return pool, pool.getconn()
        except psycopg2.Error as exc:
            self._free.release()
            raise self.unreachable(exc) from None
        except BaseException:
            self._free.release()
            raise

    @contextlib.contextmanager
    def cursor(self) -> Iterator[psycopg2.extensions.cursor]:
        """A cursor in one transaction (committed when the block ends, rolled back if it
        raises). A broken connection is dropped from the pool and reported in one sentence."""
        pool, conn = self._get()
        broken = False
        try:
            with conn, conn.cursor() as cur:
                yield cur
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            broken = True
            raise self.unreachable(exc) from None
        finally:
            with contextlib.suppress(psycopg2.Error):
                pool.putconn(conn, close=broken or conn.closed != 0)
            self._free.release()

    def migrate(self) -> int:
        """Bring the schema up to date (idempotent, safe to run from many processes at once);
        returns how many migrations ran."""
        with self.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS haytham_schema (version INTEGER NOT NULL)")
            cur.execute("SELECT max(version) FROM haytham_schema")
            done = cur.fetchone()[0] or 0
            for number, sql in enumerate(MIGRATIONS, 1):
                if number > done:
                    cur.execute(sql)
                    cur.execute("INSERT INTO haytham_schema (version) VALUES (%s)", (number,))
            return max(0, len(MIGRATIONS) - done)

    def close(self) -> None:
        with self._guard:
            if self._pool is not None:
                self._pool.closeall()
                self._pool = None


class PgSession:
    """One session in the shared database, with the methods of a session folder."""

    def __init__(self, db: Database, session_id: str) -> None:
        self.db = db
        self.session_id = session_id
        self._savers: list[PostgreSQLPersister] = []

    # -- naming --------------------------------------------------------------------------------
    def shown(self, rel: str) -> str:
        return f"Session file {rel} in session {self.session_id}"

    def where(self, rel: str) -> str:
        return f"{self.session_id}/{rel} in {self.db.where}"

    @property
    def state_label(self) -> str:
        return f"the state of session {self.session_id} in {self.db.where}"

    @staticmethod
    def _rel(rel: str) -> str:
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InputError(f"{rel!r} is not a path inside a session.")
        return rel

    # -- files ---------------------------------------------------------------------------------
    def write_text(self, rel: str, text: str) -> None:
        with self._writing(), self.db.cursor() as cur:
            cur.execute(
                "INSERT INTO haytham_files (session_id, path, content) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id, path) DO UPDATE SET content = EXCLUDED.content",
                (self.session_id, self._rel(rel), text),
            )

    def write_json(self, rel: str, data: Any) -> None:
        self.write_text(rel, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def _content(self, rel: str) -> str | None:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT content FROM haytham_files WHERE session_id = %s AND path = %s",
                (self.session_id, self._rel(rel)),
            )
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def read_text(self, rel: str, default: str = "") -> str:
        found = self._content(rel)
        return default if found is None else found

    def read_json(self, rel: str, default: Any = None) -> Any:
        found = self._content(rel)
        if found is None:
            return default
        try:
            return parse_json(found)
        except json.JSONDecodeError as exc:
            raise SessionCorrupt(self.where(rel), f"not valid JSON ({exc})") from None

    def exists(self, rel: str) -> bool:
        rel = self._rel(rel)
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT EXISTS (SELECT 1 FROM haytham_files WHERE session_id = %s "
                "AND (path = %s OR starts_with(path, %s)))",
                (self.session_id, rel, rel + "/"),
            )
            return bool(cur.fetchone()[0])

    def list(self, folder: str) -> list[str]:
        prefix = self._rel(folder) + "/"
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT path FROM haytham_files WHERE session_id = %s AND starts_with(path, %s) "
                "ORDER BY path",
                (self.session_id, prefix),
            )
            paths = [str(r[0]) for r in cur.fetchall()]
        return [p for p in paths if "/" not in p[len(prefix) :] and p.endswith(".json")]

    def all_files(self) -> dict[str, str]:
        """Every file of the session (relative path -> text), the event log and state aside."""
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT path, content FROM haytham_files WHERE session_id = %s ORDER BY path",
                (self.session_id,),
            )
            return {str(p): str(c) for p, c in cur.fetchall()}

    def remove(self, rel: str) -> None:
        rel = self._rel(rel)
        with self.db.cursor() as cur:
            cur.execute(
                "DELETE FROM haytham_files WHERE session_id = %s "
                "AND (path = %s OR starts_with(path, %s))",
                (self.session_id, rel, rel + "/"),
            )

    def tidy(self) -> None:
        """Nothing to tidy: a write is one transaction, whole or absent."""

    def check_links(self) -> None:
        """Rows hold no symbolic links."""

    # -- events --------------------------------------------------------------------------------
    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event:
        event, line = event_line(type_, stage, data)
        self.append_lines([line])
        return event

    def append_lines(self, lines: list[str]) -> None:
        """Append event lines as they are (an import); the session's ``updated_at`` moves."""
        with self._writing(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO haytham_events (session_id, line) VALUES (%s, %s)",
                [(self.session_id, line) for line in lines],
            )
            cur.execute(
                "UPDATE haytham_sessions SET updated_at = now() WHERE session_id = %s",
                (self.session_id,),
            )

    def event_lines(self) -> list[str]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT line FROM haytham_events WHERE session_id = %s ORDER BY id",
                (self.session_id,),
            )
            return [str(r[0]) for r in cur.fetchall()]

    def events(self) -> list[dict[str, Any]]:
        out = []
        for n, line in enumerate(self.event_lines(), 1):
            try:
                out.append(parse_json(line))
            except json.JSONDecodeError:
                raise SessionCorrupt(self.where("events"), f"line {n} is not JSON") from None
        return out

    def updated_at(self) -> str:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT updated_at FROM haytham_sessions WHERE session_id = %s",
                (self.session_id,),
            )
            row = cur.fetchone()
        if row is None:
            raise SessionNotFound(f"No session {self.session_id} in {self.db.where}.")
        return row[0].astimezone(UTC).isoformat(timespec="seconds")

    # -- the lock ------------------------------------------------------------------------------
    def _holder(self) -> str | None:
        high, low = lock_key(self.session_id)
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
                "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                "AND l.classid = (%s::bigint & 4294967295)::oid "
                "AND l.objid = (%s::bigint & 4294967295)::oid AND l.objsubid = 2 "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (high, low),
            )
            row = cur.fetchone()
        return None if row is None else (str(row[0]) or "another process")

    def is_busy(self) -> bool:
        """Whether some process holds this session's lock right now (never blocks)."""
        return self._holder() is not None

    @contextlib.contextmanager
    def lock(self, *, check_links: bool = True) -> Iterator[None]:  # noqa: ARG002 - same call
        """Exclusive, non-blocking, across every machine on the database; the server releases
        it if the holder dies. Burr persisters opened meanwhile are closed with it."""
        conn = self.db.connect()
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s, %s)", lock_key(self.session_id))
                held = bool(cur.fetchone()[0])
            if not held:
                holder = self._holder() or "another process"
                raise SessionLocked(
                    f"Session {self.session_id} is busy in another process ({holder}); "
                    "wait for it to finish, then try again."
                )
            try:
                yield
            finally:
                self._close_savers()
        except psycopg2.Error as exc:
            raise self.db.unreachable(exc) from None
        finally:
            conn.close()  # releases the advisory lock

    # -- Burr's state --------------------------------------------------------------------------
    def persister(self) -> PostgreSQLPersister:
        """Burr's PostgreSQL persister on a connection of its own (closed with the lock)."""
        saver = PostgreSQLPersister(self.db.connect(), table_name=TABLE)
        self._savers.append(saver)
        return saver

    def _close_savers(self) -> None:
        while self._savers:
            with contextlib.suppress(psycopg2.Error):
                self._savers.pop().cleanup()

    def state_rows(
        self, *, mine: bool = True, latest: bool = False, completed: bool = False
    ) -> list[StateRow]:
        """This session's persisted steps (the shared table never holds a copied session's
        rows under another id, so ``mine=False`` finds none)."""
        if not mine:
            return []
        with self.db.cursor() as cur:
            cur.execute(
                state_query("%s", mine=True, latest=latest, completed=completed),
                (PARTITION, self.session_id),
            )
            try:
                raw = cur.fetchall()  # psycopg2 parses the JSON column
            except RecursionError:
                raise SessionCorrupt(self.state_label, "its state is nested too deeply") from None
        try:
            return [state_row(r) for r in raw]
        except (ValueError, TypeError) as exc:
            raise SessionCorrupt(self.state_label, str(exc)) from None

    def write_rows(self, rows: list[StateRow]) -> None:
        """Insert persisted steps as they are (an import keeps their times)."""
        with self._writing(), self.db.cursor() as cur:
            cur.executemany(*row_inserts("%s", self.session_id, rows))

    def storage_failure(self, exc: Exception) -> HaythamError | None:
        """A failed database write in one sentence (the last persisted step is kept)."""
        if not isinstance(exc, psycopg2.Error):
            return None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StorageError(
            f"Could not write {self.state_label}: {first}. The last saved step is kept; "
            f"`haytham resume {self.session_id}` once the database is back."
        )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            yield
        except psycopg2.errors.ForeignKeyViolation:
            raise SessionNotFound(
                f"Session {self.session_id} was deleted meanwhile; nothing was written."
            ) from None


class PgStore:
    """Sessions in the shared database: create, open, list and delete, as the folder store."""

    def __init__(self, url: str) -> None:
        self.db = Database(url)
        self.migrated = self.db.migrate()  # migrations run now (0: already up to date)

    @property
    def location(self) -> str:
        return self.db.where

    tracking_dir = None  # Burr's tracking UI reads local folders: not kept in team mode

    def create(self, session_id: str) -> PgSession:
        validate_session_id(session_id)
        with self.db.cursor() as cur:
            cur.execute(
                "INSERT INTO haytham_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING "
                "RETURNING session_id",
                (session_id,),
            )
            if cur.fetchone() is None:
                raise InputError(f"Session {session_id} already exists; choose another id.")
        return PgSession(self.db, session_id)

    def exists(self, session_id: str) -> bool:
        validate_session_id(session_id)
        with self.db.cursor() as cur:
            cur.execute("SELECT 1 FROM haytham_sessions WHERE session_id = %s", (session_id,))
            return cur.fetchone() is not None

    def open(self, session_id: str) -> PgSession:
        if not self.exists(session_id):
            raise SessionNotFound(f"No session {session_id} in {self.db.where}.")
        return PgSession(self.db, session_id)

    def list_ids(self) -> list[str]:
        with self.db.cursor() as cur:
            cur.execute("SELECT session_id FROM haytham_sessions ORDER BY session_id")
            return [str(r[0]) for r in cur.fetchall()]

    def delete(self, session_id: str) -> None:
        files = self.open(session_id)
        with files.lock(), self.db.cursor() as cur:
            cur.execute(
                f"DELETE FROM {TABLE} WHERE partition_key = %s AND app_id = %s",
                (PARTITION, session_id),
            )
            cur.execute("DELETE FROM haytham_sessions WHERE session_id = %s", (session_id,))

    def append_audit(self, line: str, session_id: str, actor: str) -> None:
        """Append one decision line to ``haytham_audit`` (see :mod:`haytham.audit`)."""
        with self.db.cursor() as cur:
            cur.execute(
                "INSERT INTO haytham_audit (session_id, actor, line) VALUES (%s, %s, %s)",
                (session_id, actor, line),
            )

    def audit_lines(self, session_id: str | None, actor: str | None) -> list[str]:
        """The decision lines, oldest first, of ``session_id`` and/or ``actor`` (None: all)."""
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT line FROM haytham_audit WHERE (%s IS NULL OR session_id = %s) "
                "AND (%s IS NULL OR lower(actor) = lower(%s)) ORDER BY id",
                (session_id, session_id, actor, actor),
            )
            return [str(r[0]) for r in cur.fetchall()]

    def close(self) -> None:
        self.db.close()
