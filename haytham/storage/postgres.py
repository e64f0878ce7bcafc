"""The shared store: sessions in PostgreSQL, for a team deployment (``HAYTHAM_DATABASE_URL``).

It keeps the session folder's contract (:mod:`haytham.storage.folder`) with the same content: each file
of the folder is a row of ``haytham_files`` (session id, relative path, text), the event log is
``haytham_events`` (one row per line, as written), and Burr's state is in Burr's table layout
(``burr_state``), written by :class:`PoolPersister`. Everything that reads or writes a session
goes through the same methods for either store, so export, validate, status and the UI work on
both.

One driver (psycopg 3) and two pools per process (:class:`Database`): short statements share a
few kept connections; session locks and provider slots hold a connection of their own for a
while, from a second bounded pool. Neither grows with the number of sessions in flight: past the
bound a caller waits for a connection. A statement that meets a database that went away (a
restart, a failover, a dropped connection, every connection slot taken) is retried with back-off
for :data:`RETRY_FOR_S` seconds before it fails with :class:`~haytham.errors.DatabaseAway`.

The per-session lock is a PostgreSQL advisory lock held on a connection of its own for as long
as the command runs: one writer at a time across every machine, and the server releases it when
the holder's process dies (its connection closes). A lock lost with its connection (the server
restarted) is taken again before the next write goes on, or the run stops with one sentence if
another process took it meanwhile.
"""

from __future__ import annotations

import builtins  # `builtins.list` in annotations: the sessions have a method named `list`
import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any, Literal, TypeVar

import psycopg
import psycopg.errors
from burr.core import persistence
from burr.core import state as burr_state
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout
from typing_extensions import override

from haytham.errors import (
    DatabaseAway,
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

log = logging.getLogger(__name__)
T = TypeVar("T")

SCHEMA_VERSION = 1
POOL_MIN = 1  # short-statement connections each process keeps open
POOL_MAX = 2  # ... and at most (threads beyond it wait for one)
HELD_MAX = 8  # connections held for a while per process: session locks, provider slots
POOL_WAIT_S = 30.0  # how long one attempt waits for a pooled connection
RETRY_FOR_S = 120.0  # how long a statement retries while the database is away
EVENTS_CHANNEL = "haytham_events"  # NOTIFY payload: the session id whose events grew
# A machine that vanishes (power, network) holds its session locks until the server notices its
# connection is gone: TCP keepalives on both ends make that about 30 s instead of hours.
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "options": "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3",
}
# SQLSTATEs that go away by themselves: the server shutting down or starting, no connection
# slot free, a lost connection, a serialization conflict.
_TRANSIENT_STATES = {"57P01", "57P02", "57P03", "53300", "40001", "40P01"}
_TRANSIENT_TEXT = (
    "starting up",
    "shutting down",
    "too many clients",
    "too many connections",
    "connection slots are reserved",
    "terminating connection",
    "server closed the connection",
    "connection refused",
    "consuming input failed",
    "the connection is closed",
    "connection is lost",
    "timeout expired",
    "could not receive data",
    "could not send data",
    "connection to server",
)
# ... but not these: a setting to fix, however the connection failed
_PERMANENT_TEXT = ("password authentication", "does not exist", "no pg_hba.conf entry")
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
    # 2: what the pages need without reading every session's events: each session's provider
    # (the first model call's, else the one it was created with) and each completed stage's
    # wall time, kept by append_lines; filled here from the events already stored
    """
    ALTER TABLE haytham_sessions ADD COLUMN IF NOT EXISTS provider TEXT;
    ALTER TABLE haytham_sessions ADD COLUMN IF NOT EXISTS called BOOLEAN NOT NULL DEFAULT false;
    CREATE TABLE IF NOT EXISTS haytham_stage_times (
        session_id TEXT NOT NULL REFERENCES haytham_sessions ON DELETE CASCADE,
        stage TEXT NOT NULL,
        wall_s DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX IF NOT EXISTS haytham_stage_times_session ON haytham_stage_times (session_id);
    CREATE OR REPLACE FUNCTION haytham_try_jsonb(line TEXT) RETURNS JSONB AS $$
    BEGIN RETURN line::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $$
    LANGUAGE plpgsql IMMUTABLE;
    CREATE TEMP TABLE haytham_ev ON COMMIT DROP AS
        SELECT session_id, id, haytham_try_jsonb(line) AS e FROM haytham_events;
    INSERT INTO haytham_stage_times (session_id, stage, wall_s)
        SELECT session_id, e->>'stage', (e->'data'->>'wall_ms')::float / 1000 FROM haytham_ev
        WHERE e->>'type' = 'stage_completed' AND coalesce(e->>'stage', '') <> ''
        AND jsonb_typeof(e->'data'->'wall_ms') = 'number'
        AND (e->'data'->>'wall_ms')::float >= 0;
    UPDATE haytham_sessions s SET provider = p.provider, called = p.called FROM (
        SELECT DISTINCT ON (session_id) session_id,
            nullif(e->'data'->>'provider', '') AS provider, e->>'type' = 'model_call' AS called
        FROM haytham_ev WHERE e->>'type' IN ('model_call', 'session_created')
        ORDER BY session_id, (e->>'type' = 'model_call') DESC, id
    ) p WHERE p.session_id = s.session_id;
    """,
    # 3: who each queue worker is (procrastinate_workers keeps only an id and a heartbeat)
    """
    CREATE TABLE IF NOT EXISTS haytham_workers (
        worker_id BIGINT PRIMARY KEY,
        name TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    """,
    # 4: the decision record (haytham/people/audit.py): no foreign key, so a deleted session's record
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
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the database HAYTHAM_DATABASE_URL names"
    host = parts.get("host") or "localhost"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or '?'}"


def lock_key(session_id: str) -> tuple[int, int]:
    """The advisory lock of a session as PostgreSQL's two 32-bit keys (a stable 64-bit hash)."""
    digest = hashlib.blake2b(f"haytham:{session_id}".encode(), digest_size=8).digest()
    high, low = int.from_bytes(digest[:4], "big"), int.from_bytes(digest[4:], "big")
    return high - (1 << 32) * (high >= 1 << 31), low - (1 << 32) * (low >= 1 << 31)


def transient(exc: BaseException) -> bool:
    """Whether a database error goes away by itself (restart, failover, lost connection, no
    free connection slot), so the statement is worth trying again."""
    if isinstance(exc, PoolTimeout | DatabaseAway):
        return True
    if isinstance(exc, psycopg.errors.ForeignKeyViolation | psycopg.errors.UniqueViolation):
        return False
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        state = getattr(exc, "sqlstate", None)
        if state in _TRANSIENT_STATES or (state or "").startswith("08"):
            return True
        text = str(exc).lower()
        if any(t in text for t in _PERMANENT_TEXT):
            return False
        return any(t in text for t in _TRANSIENT_TEXT) or (
            state is None and isinstance(exc, psycopg.InterfaceError)
        )
    return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _reset_held(conn: psycopg.Connection[Any]) -> None:
    """A held connection goes back to its pool holding nothing: no advisory lock, no LISTEN."""
    conn.execute("SELECT pg_advisory_unlock_all()")
    conn.execute("UNLISTEN *")


class _Hold:
    """A session lock held by this process: its connection and the fault count it was seen at."""

    def __init__(self, conn: psycopg.Connection[Any], faults: int) -> None:
        self.conn = conn
        self.faults = faults


class Database:
    """Connections to the shared database, built once per process: a small pool of kept
    connections for short statements (:meth:`run`), and a bounded pool of connections held for
    a while (:meth:`held`: session locks, provider slots). Both check a connection before
    handing it out and replace one the server dropped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = where(url)
        # who holds a lock, in "busy" messages (PostgreSQL keeps 63 characters: pid first)
        self._name = f"haytham pid {os.getpid()} on {socket.gethostname()}"[:63]
        self._guard = threading.Lock()
        self._pool: ConnectionPool[Any] | None = None
        self._held: ConnectionPool[Any] | None = None
        self._locks: dict[str, _Hold] = {}
        self._reached = False  # once it answered, a failure to connect is the database away
        self.faults = 0  # how many times a statement met the database away (locks re-check)

    def _kwargs(self) -> dict[str, Any]:
        return {"application_name": self._name, "connect_timeout": 10, **KEEPALIVES}

    def unreachable(self, exc: BaseException) -> StorageError:
        """A database that can't be used, in one sentence (never the URL's password): one that
        never answered is a setting to fix (:class:`StorageError`, at once); one that answered
        before and now fails with an error that goes away is :class:`DatabaseAway`."""
        kind = DatabaseAway if transient(exc) and self._reached else StorageError
        return kind(
            f"Could not use the shared database {self.where}: {_first_line(exc)}. Check "
            "HAYTHAM_DATABASE_URL and that PostgreSQL is running (`make services` starts one "
            "on this machine); nothing was changed."
        )

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of its own, outside the pools (closing it releases what it holds)."""
        try:
            conn = psycopg.connect(self.url, **self._kwargs())
        except psycopg.Error as exc:
            raise self.unreachable(exc) from None
        self._reached = True
        return conn

    def _pool_of(self, key: Literal["short", "held"]) -> ConnectionPool[Any]:
        """One of the pools, opened on first use after one direct connection proved the
        database answers: a wrong URL fails now, in one sentence, instead of in a pool."""
        with self._guard:
            found = self._pool if key == "short" else self._held
        if found is not None:
            return found
        self.connect().close()  # raises the one sentence when the database can't be reached
        with self._guard:
            if key == "short" and self._pool is None:
                self._pool = ConnectionPool(
                    self.url,
                    kwargs=self._kwargs(),
                    min_size=POOL_MIN,
                    max_size=POOL_MAX,
                    timeout=POOL_WAIT_S,
                    check=ConnectionPool.check_connection,
                    name="haytham",
                    reconnect_timeout=RETRY_FOR_S * 10,
                    open=True,
                )
            if key == "held" and self._held is None:
                self._held = ConnectionPool(
                    self.url,
                    kwargs={**self._kwargs(), "autocommit": True},
                    min_size=0,
                    max_size=HELD_MAX,
                    timeout=POOL_WAIT_S,
                    check=ConnectionPool.check_connection,
                    reset=_reset_held,
                    name="haytham-held",
                    reconnect_timeout=RETRY_FOR_S * 10,
                    open=True,
                )
            found = self._pool if key == "short" else self._held
        assert found is not None
        return found

    def retrying(self, attempt: Callable[[], T], what: str = "a statement") -> T:
        """``attempt()``, tried again with back-off (0.1 s doubling to 2 s) while the database
        is away, for :data:`RETRY_FOR_S` seconds; then :class:`DatabaseAway` in one sentence.
        Errors that will not go away (a constraint, a wrong URL) are raised at once."""
        deadline: float | None = None
        delay = 0.1
        while True:
            try:
                return attempt()
            except (psycopg.Error, PoolTimeout, DatabaseAway) as exc:
                if not transient(exc):
                    raise
                with self._guard:
                    self.faults += 1
                now = time.monotonic()
                if deadline is None:
                    deadline = now + RETRY_FOR_S
                    log.warning(
                        "the shared database %s is away (%s); retrying %s for up to %.0f s",
                        self.where,
                        _first_line(exc),
                        what,
                        RETRY_FOR_S,
                    )
                if now >= deadline:
                    raise self.unreachable(exc) from None
                time.sleep(min(delay, max(0.0, deadline - now)))
                delay = min(delay * 2, 2.0)

    def run(self, work: Callable[[psycopg.Cursor[Any]], T]) -> T:
        """``work(cursor)`` in one transaction on a pooled connection (committed when it
        returns, rolled back if it raises), retried whole while the database is away."""

        def attempt() -> T:
            with self._pool_of("short").connection() as conn, conn.cursor() as cur:
                return work(cur)

        return self.retrying(attempt)

    @contextlib.contextmanager
    def cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one transaction, tried once (committed when the block ends, rolled back
        if it raises); a database that can't be reached is reported in one sentence."""
        try:
            with self._pool_of("short").connection() as conn, conn.cursor() as cur:
                yield cur
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as exc:
            raise self.unreachable(exc) from None

    def prepare(self) -> None:
        """Open the held pool now (one connection proves the database answers), so a failure
        to connect later, mid-run, is known to be the database away, not a wrong setting."""
        self._pool_of("held")

    def take_held(self) -> psycopg.Connection[Any]:
        """A connection for holding something (autocommit), waiting for one while the held
        pool is exhausted or the database away; give it back with :meth:`give_back`."""

        def attempt() -> psycopg.Connection[Any]:
            return self._pool_of("held").getconn()

        return self.retrying(attempt, "taking a connection")

    def unlock(self, session_id: str, conn: psycopg.Connection[Any]) -> None:
        """Release ``session_id``'s lock on ``conn`` now, then give the connection back. The
        pool's reset would release it too, but later, in its own thread: until then every other
        process would still see the session as busy."""
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", lock_key(session_id))
        self.give_back(conn)

    def give_back(self, conn: psycopg.Connection[Any]) -> None:
        """Return a held connection: whatever it holds is released (or the broken connection
        is dropped, which releases it on the server)."""
        held = self._held
        if held is None:
            conn.close()
            return
        with contextlib.suppress(psycopg.Error, PoolTimeout):
            held.putconn(conn)

    def migrate(self) -> int:
        """Bring the schema up to date (idempotent, safe to run from many processes at once);
        returns how many migrations ran."""

        def work(cur: psycopg.Cursor[Any]) -> int:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS haytham_schema (version INTEGER NOT NULL)")
            cur.execute("SELECT max(version) FROM haytham_schema")
            row = cur.fetchone()  # an aggregate: always one row, NULL on an empty table
            done = (row[0] if row else None) or 0
            for number, sql in enumerate(MIGRATIONS, 1):
                if number > done:
                    cur.execute(sql)
                    cur.execute("INSERT INTO haytham_schema (version) VALUES (%s)", (number,))
            return max(0, len(MIGRATIONS) - done)

        return self.run(work)

    # -- session locks ---------------------------------------------------------------------------
    def try_lock(self, session_id: str) -> psycopg.Connection[Any] | None:
        """A held connection that now holds ``session_id``'s advisory lock, or ``None`` when
        another process holds it (a fresh connection per try while the database is away)."""

        def attempt() -> psycopg.Connection[Any] | None:
            conn = self._pool_of("held").getconn()
            try:
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)", lock_key(session_id)
                ).fetchone()
            except BaseException:
                self.give_back(conn)
                raise
            if row and row[0]:
                return conn
            self.give_back(conn)
            return None

        return self.retrying(attempt, "taking a session lock")

    def hold_lock(self, session_id: str, conn: psycopg.Connection[Any]) -> None:
        """Remember ``conn`` (from :meth:`try_lock`) as the connection holding ``session_id``'s
        lock, so :meth:`check_lock` can take it again after the database was away."""
        with self._guard:
            self._locks[session_id] = _Hold(conn, self.faults)

    def drop_lock(self, session_id: str) -> psycopg.Connection[Any] | None:
        """Forget ``session_id``'s lock; returns its connection for :meth:`give_back`, which
        releases the lock (``None``: not held here)."""
        with self._guard:
            hold = self._locks.pop(session_id, None)
        return None if hold is None else hold.conn

    def check_lock(self, session_id: str) -> None:
        """After the database was away, make sure this process still holds ``session_id``'s
        lock: its connection may have died with the server, and the server forgot the lock.
        Take it again on a new connection; :class:`SessionLocked` if another process has it."""
        with self._guard:
            hold = self._locks.get(session_id)
            if hold is None or hold.faults == self.faults:
                return
            hold.faults = self.faults
        try:
            hold.conn.execute("SELECT 1")
            return  # the connection lived through it: the lock is still held
        except psycopg.Error:
            pass
        self.give_back(hold.conn)
        conn = self.try_lock(session_id)
        if conn is None:
            with self._guard:
                self._locks.pop(session_id, None)
            raise SessionLocked(
                f"Session {session_id} was taken by another process while the shared database "
                "was away; this run stops here and its saved steps are kept."
            )
        log.warning("session %s: lock taken again after the database came back", session_id)
        hold.conn = conn

    def close(self) -> None:
        """Close both pools (this process's connections); the database keeps everything."""
        with self._guard:
            pools, self._pool, self._held = (self._pool, self._held), None, None
        for pool in pools:
            if pool is not None:
                pool.close()


def _facts(lines: list[str]) -> tuple[list[tuple[str, float]], str | None, str | None]:
    """What :func:`PgSession.append_lines` keeps beside the lines: each completed stage's wall
    time in seconds, the provider of the first model call, and the one a new session names."""
    walls: list[tuple[str, float]] = []
    called = created = None
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind, stage, data = event.get("type"), event.get("stage"), event.get("data") or {}
        wall = data.get("wall_ms")
        if kind == "stage_completed" and stage and isinstance(wall, int | float):
            if not isinstance(wall, bool) and wall >= 0:
                walls.append((str(stage), float(wall) / 1000))
        elif kind == "model_call" and called is None:
            called = str(data.get("provider") or "") or None
        elif kind == "session_created" and created is None:
            created = str(data.get("provider") or "") or None
    return walls, called, created


class PoolPersister(persistence.BaseStatePersister):
    """Burr's state persister on the shared database's pool, in Burr's PostgreSQL table layout.

    Burr's own ``PostgreSQLPersister`` takes one psycopg2 connection and keeps it for the whole
    run: one more driver, one connection per running session, and a run that fails for good
    when that connection drops. This one borrows a pooled connection per load or save and
    retries while the database is away (:meth:`Database.run`); a save repeated after a lost
    acknowledgement finds its row there and changes nothing."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @override
    def list_app_ids(self, partition_key: str, **kwargs: Any) -> list[str]:
        def work(cur: psycopg.Cursor[Any]) -> list[str]:
            cur.execute(
                f"SELECT app_id FROM {TABLE} WHERE partition_key = %s "
                "GROUP BY app_id ORDER BY max(created_at) DESC",
                (partition_key,),
            )
            return [str(r[0]) for r in cur.fetchall()]

        return self.db.run(work)

    @override
    def load(
        self,
        partition_key: str | None,
        app_id: str | None,
        sequence_id: int | None = None,
        **kwargs: Any,
    ) -> persistence.PersistedStateData | None:
        columns = "position, state, sequence_id, app_id, created_at, status"
        key = partition_key if partition_key is not None else ""
        args: tuple[Any, ...]
        if app_id is None:
            sql, args = (
                f"SELECT {columns} FROM {TABLE} WHERE partition_key = %s "
                "ORDER BY created_at DESC LIMIT 1",
                (key,),
            )
        elif sequence_id is None:
            sql, args = (
                f"SELECT {columns} FROM {TABLE} WHERE partition_key = %s AND app_id = %s "
                "ORDER BY sequence_id DESC LIMIT 1",
                (key, app_id),
            )
        else:
            sql, args = (
                f"SELECT {columns} FROM {TABLE} WHERE partition_key = %s AND app_id = %s "
                "AND sequence_id = %s",
                (key, app_id, sequence_id),
            )

        def work(cur: psycopg.Cursor[Any]) -> Any:
            cur.execute(sql, args)
            return cur.fetchone()

        row = self.db.run(work)
        if row is None:
            return None
        return {
            "partition_key": key,
            "app_id": row[3],
            "sequence_id": row[2],
            "position": row[0],
            "state": burr_state.State.deserialize(row[1]),
            "created_at": row[4],
            "status": row[5],
        }

    @override
    def save(
        self,
        partition_key: str | None,
        app_id: str,
        sequence_id: int,
        position: str,
        state: burr_state.State,
        status: Literal["completed", "failed"],
        **kwargs: Any,
    ) -> None:
        text = json.dumps(state.serialize())
        key = partition_key if partition_key is not None else ""  # as load reads it

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                f"INSERT INTO {TABLE} (partition_key, app_id, sequence_id, position, state, "
                "status) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (key, app_id, sequence_id, position, text, status),
            )

        self.db.check_lock(app_id)
        self.db.run(work)


class PgSession(Session):
    """One session in the shared database, with the methods of a session folder."""

    def __init__(self, db: Database, session_id: str) -> None:
        self.db = db
        self.session_id = session_id

    # -- naming --------------------------------------------------------------------------------
    @override
    def shown(self, rel: str) -> str:
        return f"Session file {rel} in session {self.session_id}"

    @override
    def where(self, rel: str) -> str:
        return f"{self.session_id}/{rel} in {self.db.where}"

    @property
    @override
    def state_label(self) -> str:
        return f"the state of session {self.session_id} in {self.db.where}"

    @staticmethod
    def _rel(rel: str) -> str:
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InputError(f"{rel!r} is not a path inside a session.")
        return rel

    def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        def work(cur: psycopg.Cursor[Any]) -> Any:
            cur.execute(sql, args)
            return cur.fetchone()

        return self.db.run(work)

    def _all(self, sql: str, args: tuple[Any, ...]) -> builtins.list[Any]:
        def work(cur: psycopg.Cursor[Any]) -> builtins.list[Any]:
            cur.execute(sql, args)
            return cur.fetchall()

        return self.db.run(work)

    # -- files ---------------------------------------------------------------------------------
    @override
    def write_text(self, rel: str, text: str) -> None:
        args = (self.session_id, self._rel(rel), text)
        with self._writing():
            self._one(
                "INSERT INTO haytham_files (session_id, path, content) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id, path) DO UPDATE SET content = EXCLUDED.content "
                "RETURNING 1",
                args,
            )

    @override
    def write_json(self, rel: str, data: Any) -> None:
        self.write_text(rel, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def _content(self, rel: str) -> str | None:
        row = self._one(
            "SELECT content FROM haytham_files WHERE session_id = %s AND path = %s",
            (self.session_id, self._rel(rel)),
        )
        return None if row is None else str(row[0])

    @override
    def read_text(self, rel: str, default: str = "") -> str:
        found = self._content(rel)
        return default if found is None else found

    @override
    def read_json(self, rel: str, default: Any = None) -> Any:
        found = self._content(rel)
        if found is None:
            return default
        try:
            return parse_json(found)
        except json.JSONDecodeError as exc:
            raise SessionCorrupt(self.where(rel), f"not valid JSON ({exc})") from None

    @override
    def exists(self, rel: str) -> bool:
        rel = self._rel(rel)
        row = self._one(
            "SELECT EXISTS (SELECT 1 FROM haytham_files WHERE session_id = %s "
            "AND (path = %s OR starts_with(path, %s)))",
            (self.session_id, rel, rel + "/"),
        )
        return bool(row[0])

    @override
    def list(self, folder: str) -> builtins.list[str]:
        prefix = self._rel(folder) + "/"
        rows = self._all(
            "SELECT path FROM haytham_files WHERE session_id = %s AND starts_with(path, %s) "
            "ORDER BY path",
            (self.session_id, prefix),
        )
        paths = [str(r[0]) for r in rows]
        return [p for p in paths if "/" not in p[len(prefix) :] and p.endswith(".json")]

    @override
    def all_files(self) -> dict[str, str]:
        """Every file of the session (relative path -> text), the event log and state aside."""
        rows = self._all(
            "SELECT path, content FROM haytham_files WHERE session_id = %s ORDER BY path",
            (self.session_id,),
        )
        return {str(p): str(c) for p, c in rows}

    @override
    def remove(self, rel: str) -> None:
        rel = self._rel(rel)

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                "DELETE FROM haytham_files WHERE session_id = %s "
                "AND (path = %s OR starts_with(path, %s))",
                (self.session_id, rel, rel + "/"),
            )

        self.db.run(work)

    @override
    def tidy(self) -> None:
        """Nothing to tidy: a write is one transaction, whole or absent."""

    def check_links(self) -> None:
        """Rows hold no symbolic links."""

    # -- events --------------------------------------------------------------------------------
    @override
    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event:
        event, line = event_line(type_, stage, data)
        self.append_lines([line])
        return event

    @override
    def append_lines(self, lines: builtins.list[str]) -> None:
        """Append event lines as they are (an import); the session's ``updated_at`` moves and
        listeners on :data:`EVENTS_CHANNEL` hear the session's id when the write commits."""

        walls, called, created = _facts(lines)

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.executemany(
                "INSERT INTO haytham_events (session_id, line) VALUES (%s, %s)",
                [(self.session_id, line) for line in lines],
            )
            if walls:
                cur.executemany(
                    "INSERT INTO haytham_stage_times (session_id, stage, wall_s) "
                    "VALUES (%s, %s, %s)",
                    [(self.session_id, stage, wall) for stage, wall in walls],
                )
            cur.execute(
                "UPDATE haytham_sessions SET updated_at = now(), provider = CASE "
                "WHEN %(called)s::text IS NOT NULL AND NOT called THEN %(called)s::text "
                "WHEN %(created)s::text IS NOT NULL AND provider IS NULL THEN %(created)s::text "
                "ELSE provider END, called = called OR %(called)s::text IS NOT NULL "
                "WHERE session_id = %(sid)s",
                {"called": called, "created": created, "sid": self.session_id},
            )
            cur.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, self.session_id))

        with self._writing():
            self.db.run(work)

    @override
    def event_lines(self, after: int = 0) -> builtins.list[str]:
        return [line for _, line in self.event_rows(after)]

    def event_rows(self, after: int = 0) -> builtins.list[tuple[int, str]]:
        """The session's event lines with their row ids, those after row id ``after``."""
        rows = self._all(
            "SELECT id, line FROM haytham_events WHERE session_id = %s AND id > %s ORDER BY id",
            (self.session_id, after),
        )
        return [(int(i), str(line)) for i, line in rows]

    @override
    def events(self) -> builtins.list[dict[str, Any]]:
        out = []
        for n, line in enumerate(self.event_lines(), 1):
            try:
                out.append(parse_json(line))
            except json.JSONDecodeError:
                raise SessionCorrupt(self.where("events"), f"line {n} is not JSON") from None
        return out

    @override
    def updated_at(self) -> str:
        row = self._one(
            "SELECT updated_at FROM haytham_sessions WHERE session_id = %s", (self.session_id,)
        )
        if row is None:
            raise SessionNotFound(f"No session {self.session_id} in {self.db.where}.")
        return row[0].astimezone(UTC).isoformat(timespec="seconds")

    # -- the lock ------------------------------------------------------------------------------
    def _holder(self) -> str | None:
        high, low = lock_key(self.session_id)
        row = self._one(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
            "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = (%s::bigint & 4294967295)::oid "
            "AND l.objid = (%s::bigint & 4294967295)::oid AND l.objsubid = 2 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (high, low),
        )
        return None if row is None else (str(row[0]) or "another process")

    @override
    def is_busy(self) -> bool:
        """Whether some process holds this session's lock right now (never blocks)."""
        return self._holder() is not None

    @contextlib.contextmanager
    @override
    def lock(self, *, check_links: bool = True) -> Iterator[None]:  # noqa: ARG002 - same call
        """Exclusive, non-blocking, across every machine on the database; the server releases
        it if the holder dies. Held on a connection of the held pool for the block; if the
        database restarts meanwhile, the next write takes it again (:meth:`Database.check_lock`)."""
        conn = self.db.try_lock(self.session_id)
        if conn is None:
            holder = self._holder() or "another process"
            raise SessionLocked(
                f"Session {self.session_id} is busy in another process ({holder}); "
                "wait for it to finish, then try again."
            )
        self.db.hold_lock(self.session_id, conn)
        try:
            yield
        finally:
            last = self.db.drop_lock(self.session_id)
            if last is not None:
                self.db.unlock(self.session_id, last)

    # -- Burr's state --------------------------------------------------------------------------
    @override
    def persister(self) -> PoolPersister:
        """Burr's state persister for this session, on the shared pool (:class:`PoolPersister`)."""
        return PoolPersister(self.db)

    @override
    def state_rows(
        self, *, mine: bool = True, latest: bool = False, completed: bool = False
    ) -> builtins.list[StateRow]:
        """This session's persisted steps (the shared table never holds a copied session's
        rows under another id, so ``mine=False`` finds none)."""
        if not mine:
            return []
        try:
            raw = self._all(
                state_query("%s", mine=True, latest=latest, completed=completed),
                (PARTITION, self.session_id),
            )
        except RecursionError:  # psycopg parses the JSON column
            raise SessionCorrupt(self.state_label, "its state is nested too deeply") from None
        try:
            return [state_row(r) for r in raw]
        except (ValueError, TypeError) as exc:
            raise SessionCorrupt(self.state_label, str(exc)) from None

    @override
    def write_rows(self, rows: builtins.list[StateRow]) -> None:
        """Insert persisted steps as they are (an import keeps their times)."""
        sql, params = row_inserts("%s", self.session_id, rows)

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.executemany(sql, params)

        with self._writing():
            self.db.run(work)

    @override
    def storage_failure(self, exc: Exception) -> HaythamError | None:
        """A failed database write in one sentence (the last persisted step is kept)."""
        if isinstance(exc, DatabaseAway):
            return exc
        if not isinstance(exc, psycopg.Error | PoolTimeout):
            return None
        return StorageError(
            f"Could not write {self.state_label}: {_first_line(exc)}. The last saved step is "
            f"kept; `haytham resume {self.session_id}` once the database is back."
        )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        self.db.check_lock(self.session_id)
        try:
            yield
        except psycopg.errors.ForeignKeyViolation:
            raise SessionNotFound(
                f"Session {self.session_id} was deleted meanwhile; nothing was written."
            ) from None


class PgStore(Store):
    """Sessions in the shared database: create, open, list and delete, as the folder store."""

    def __init__(self, url: str) -> None:
        self.db = Database(url)
        self.migrated = self.db.migrate()  # migrations run now (0: already up to date)

    @property
    @override
    def location(self) -> str:
        return self.db.where

    tracking_dir = None  # Burr's tracking UI reads local folders: not kept in team mode

    @override
    def create(self, session_id: str) -> PgSession:
        validate_session_id(session_id)

        def work(cur: psycopg.Cursor[Any]) -> Any:
            cur.execute(
                "INSERT INTO haytham_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING "
                "RETURNING session_id",
                (session_id,),
            )
            return cur.fetchone()

        if self.db.run(work) is None:
            raise InputError(f"Session {session_id} already exists; choose another id.")
        return PgSession(self.db, session_id)

    @override
    def exists(self, session_id: str) -> bool:
        validate_session_id(session_id)

        def work(cur: psycopg.Cursor[Any]) -> bool:
            cur.execute("SELECT 1 FROM haytham_sessions WHERE session_id = %s", (session_id,))
            return cur.fetchone() is not None

        return self.db.run(work)

    @override
    def open(self, session_id: str) -> PgSession:
        if not self.exists(session_id):
            raise SessionNotFound(f"No session {session_id} in {self.db.where}.")
        return PgSession(self.db, session_id)

    @override
    def list_ids(self) -> list[str]:
        def work(cur: psycopg.Cursor[Any]) -> list[str]:
            cur.execute("SELECT session_id FROM haytham_sessions ORDER BY session_id")
            return [str(r[0]) for r in cur.fetchall()]

        return self.db.run(work)

    def stage_medians(
        self, provider: str, exclude: str | None = None
    ) -> dict[str, tuple[float, int]]:
        """Per stage row, the median wall time (s) of its completed runs in the sessions that
        ran on ``provider`` (except ``exclude``), and how many: one aggregate query."""

        def work(cur: psycopg.Cursor[Any]) -> dict[str, tuple[float, int]]:
            cur.execute(
                "SELECT t.stage, percentile_cont(0.5) WITHIN GROUP (ORDER BY t.wall_s), "
                "count(*) FROM haytham_stage_times t JOIN haytham_sessions s "
                "ON s.session_id = t.session_id WHERE s.provider = %s AND s.session_id <> %s "
                "GROUP BY t.stage",
                (provider, exclude or ""),
            )
            return {str(st): (float(m), int(n)) for st, m, n in cur.fetchall()}

        return self.db.run(work)

    def session_rows(self) -> list[dict[str, Any]]:
        """Every session, newest update first, as the Sessions page lists it: id, ``updated``
        (ISO time), ``idea``, ``status`` (as ``summary.json`` last recorded it, ``None`` before
        the first step), ``forked_from`` and ``owner``; one query, whatever the number of sessions."""

        def work(cur: psycopg.Cursor[Any]) -> list[Any]:
            cur.execute(
                "SELECT s.session_id, s.updated_at, "
                "(SELECT f.content FROM haytham_files f WHERE f.session_id = s.session_id "
                "AND f.path = 'idea.md'), "
                "(SELECT haytham_try_jsonb(f.content) ->> 'status' FROM haytham_files f "
                "WHERE f.session_id = s.session_id AND f.path = 'summary.json'), "
                "(SELECT haytham_try_jsonb(f.content) #>> '{forked_from,session_id}' "
                "FROM haytham_files f WHERE f.session_id = s.session_id "
                "AND f.path = 'session.json'), "
                "(SELECT haytham_try_jsonb(f.content) ->> 'owner' FROM haytham_files f "
                "WHERE f.session_id = s.session_id AND f.path = 'session.json') "
                "FROM haytham_sessions s ORDER BY s.updated_at DESC, s.session_id"
            )
            return cur.fetchall()

        return [
            {
                "session": str(sid),
                "updated": at.astimezone(UTC).isoformat(timespec="seconds"),
                "idea": str(idea or "").strip(),
                "status": status,
                "forked_from": parent,
                "owner": owner,
            }
            for sid, at, idea, status, parent, owner in self.db.run(work)
        ]

    @override
    def delete(self, session_id: str) -> None:
        files = self.open(session_id)

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                f"DELETE FROM {TABLE} WHERE partition_key = %s AND app_id = %s",
                (PARTITION, session_id),
            )
            cur.execute("DELETE FROM haytham_sessions WHERE session_id = %s", (session_id,))

        with files.lock():
            self.db.run(work)

    @override
    def append_audit(self, line: str, session_id: str, actor: str) -> None:
        """Append one decision line to ``haytham_audit`` (see :mod:`haytham.people.audit`)."""

        def work(cur: psycopg.Cursor[Any]) -> None:
            cur.execute(
                "INSERT INTO haytham_audit (session_id, actor, line) VALUES (%s, %s, %s)",
                (session_id, actor, line),
            )

        self.db.run(work)

    @override
    def audit_lines(self, session_id: str | None, actor: str | None) -> list[str]:
        """The decision lines, oldest first, of ``session_id`` and/or ``actor`` (None: all)."""

        def work(cur: psycopg.Cursor[Any]) -> list[str]:
            cur.execute(
                "SELECT line FROM haytham_audit WHERE (%s::text IS NULL OR session_id = %s) "
                "AND (%s::text IS NULL OR lower(actor) = lower(%s)) ORDER BY id",
                (session_id, session_id, actor, actor),
            )
            return [str(r[0]) for r in cur.fetchall()]

        return self.db.run(work)

    @override
    def close(self) -> None:
        self.db.close()
