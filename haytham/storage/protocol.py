"""What every session store offers, whichever holds the sessions: the session folder
(:mod:`haytham.storage.folder`, the default) or the shared PostgreSQL database (:mod:`haytham.storage.postgres`,
``HAYTHAM_DATABASE_URL``).

The :class:`Session` and :class:`Store` protocols are all the commands use; the rest is what
both implementations share: session ids, event lines, Burr's state rows (their query, insert and
shape) and :func:`open_store`, which picks the store from the settings.
"""

from __future__ import annotations

import builtins  # `builtins.list` in annotations: the sessions have a method named `list`
import contextlib
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from haytham.errors import HaythamError, InputError
from haytham.safety.redact import redact_json, redact_tree
from haytham.schemas.events import Event

SESSION_ID = re.compile(r"^[a-z0-9-]{1,64}$")
PARTITION = "local"  # Burr's partition key for every session
TABLE = "burr_state"  # Burr's state table, in ``state.db`` or in the shared database


@dataclass(frozen=True)
class StateRow:
    """One persisted Burr step of a session, as stored (``state`` is Burr's serialised JSON)."""

    app_id: str
    sequence_id: int
    position: str
    state: dict[str, Any]
    status: str
    created_at: str | None = None


class Session(Protocol):
    """What every command reads and writes of one session, whichever store holds it: a session
    folder (:class:`SessionFiles`) or the shared database (:class:`haytham.storage.postgres.PgSession`).

    Files are named by session-relative paths (``stages/01_idea/output.json``); the event log
    and Burr's state rows are kept apart from them."""

    session_id: str

    @property
    def state_label(self) -> str:
        """How messages name where this session's Burr state lives."""
        ...

    def shown(self, rel: str) -> str:
        """How a message names the session file ``rel`` (no machine path)."""
        ...

    def where(self, rel: str) -> str:
        """Where the session file ``rel`` lives (a path or the database), for messages."""
        ...

    def write_text(self, rel: str, text: str) -> None:
        """Write the file ``rel`` whole (a reader sees the old text or the new, never part)."""
        ...

    def write_json(self, rel: str, data: Any) -> None:
        """Write ``data`` as indented UTF-8 JSON to ``rel`` (as :meth:`write_text`)."""
        ...

    def read_text(self, rel: str, default: str = "") -> str:
        """The text of ``rel``; ``default`` when it does not exist."""
        ...

    def read_json(self, rel: str, default: Any = None) -> Any:
        """The parsed JSON of ``rel``; ``default`` when it does not exist, ``SessionCorrupt``
        when it is not JSON."""
        ...

    def exists(self, rel: str) -> bool:
        """Whether the file or folder ``rel`` exists in the session."""
        ...

    def list(self, folder: str) -> builtins.list[str]:
        """The ``*.json`` files directly in ``folder``, as session-relative paths, sorted."""
        ...

    def all_files(self) -> dict[str, str]:
        """Every file of the session (relative path -> text), the event log and state aside:
        what an export or a fork copies."""
        ...

    def remove(self, rel: str) -> None:
        """Delete the file ``rel``, or the folder ``rel`` with everything in it (none: no-op)."""
        ...

    def tidy(self) -> None:
        """Clear what a writer that died mid-write left behind (call under the lock)."""
        ...

    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event:
        """Append one event to the log, its text redacted first; returns the event."""
        ...

    def append_lines(self, lines: builtins.list[str]) -> None:
        """Append event lines as they are (an import or a fork keeps them unchanged)."""
        ...

    def event_lines(self) -> builtins.list[str]:
        """The event log's lines as written, oldest first (blank lines left out)."""
        ...

    def events(self) -> builtins.list[dict[str, Any]]:
        """The event log parsed, oldest first; ``SessionCorrupt`` for a line that is not JSON
        (the folder store skips a torn last line)."""
        ...

    def updated_at(self) -> str:
        """When the session last changed, ISO 8601 UTC to the second."""
        ...

    def is_busy(self) -> bool:
        """Whether some process holds this session's lock right now (never blocks)."""
        ...

    def lock(self, *, check_links: bool = True) -> contextlib.AbstractContextManager[None]:
        """The session's exclusive lock for the block (never waits: ``SessionLocked`` if held);
        released by the OS or the server if its holder dies."""
        ...

    def persister(self) -> Any:
        """Burr's state persister for this session."""
        ...

    def state_rows(
        self, *, mine: bool = True, latest: bool = False, completed: bool = False
    ) -> builtins.list[StateRow]:
        """The session's persisted Burr steps, oldest first (only the ``latest``, only
        ``completed`` ones, or with ``mine=False`` a copied folder's rows under another id)."""
        ...

    def write_rows(self, rows: builtins.list[StateRow]) -> None:
        """Insert persisted steps as they are (an import keeps their times)."""
        ...

    def storage_failure(self, exc: Exception) -> HaythamError | None:
        """What a failed state write means, in one sentence (``None``: not a storage failure)."""
        ...


class Store(Protocol):
    """The sessions: a folder (:class:`SessionStore`) or the shared database
    (:class:`haytham.storage.postgres.PgStore`)."""

    @property
    def location(self) -> str:
        """Where the sessions are, for messages (a folder, or the database without password)."""
        ...

    @property
    def tracking_dir(self) -> Path | None:
        """Burr's tracking folder (``None``: not kept, as in team mode)."""
        ...

    def create(self, session_id: str) -> Session:
        """A new, empty session; ``InputError`` if the id is taken or not a valid id."""
        ...

    def open(self, session_id: str) -> Session:
        """The existing session ``session_id``; ``SessionNotFound`` if there is none."""
        ...

    def exists(self, session_id: str) -> bool:
        """Whether the session ``session_id`` exists."""
        ...

    def list_ids(self) -> list[str]:
        """Every session's id, sorted."""
        ...

    def delete(self, session_id: str) -> None:
        """Delete the session with its state, under its lock."""
        ...

    def close(self) -> None:
        """Release what the store holds (the database's connections)."""
        ...

    def append_audit(self, line: str, session_id: str, actor: str) -> None:
        """Append one line to the decision record, which lives outside every session."""
        ...

    def audit_lines(self, session_id: str | None, actor: str | None) -> list[str]:
        """The decision lines, oldest first, of ``session_id`` and/or ``actor`` (None: all)."""
        ...


def event_line(type_: str, stage: str | None, data: dict[str, Any]) -> tuple[Event, str]:
    """One event and its JSON line, redacted first (provider errors echo credentials)."""
    event = Event(ts=now(), type=type_, stage=stage, data=redact_tree(data))
    return event, redact_json(event.model_dump_json())  # shapes across keys and values


_ROW_COLUMNS = "app_id, sequence_id, position, state, status, created_at"


def state_query(placeholder: str, *, mine: bool, latest: bool, completed: bool) -> str:
    """The SELECT behind :meth:`SessionFiles.state_rows` (SQLite ``?`` or PostgreSQL ``%s``)."""
    where = f"partition_key = {placeholder} AND app_id {'=' if mine else '<>'} {placeholder}"
    if completed:
        where += " AND status = 'completed'"
    order = "sequence_id DESC" if mine else "created_at DESC, sequence_id DESC"
    if not latest:
        order = "sequence_id, created_at"
    return f"SELECT {_ROW_COLUMNS} FROM {TABLE} WHERE {where} ORDER BY {order}" + (
        " LIMIT 1" if latest else ""
    )


def row_inserts(
    placeholder: str, session_id: str, rows: list[StateRow]
) -> tuple[str, list[tuple[Any, ...]]]:
    """The INSERT of persisted steps as they are, times kept (an import), and its parameters."""
    marks = ", ".join([placeholder] * 7)
    sql = (
        f"INSERT INTO {TABLE} (partition_key, app_id, sequence_id, position, state, status, "
        f"created_at) VALUES ({marks})"
    )
    params = [
        (
            PARTITION,
            session_id,
            r.sequence_id,
            r.position,
            json.dumps(r.state),
            r.status,
            r.created_at,
        )
        for r in rows
    ]
    return sql, params


def state_row(raw: tuple[Any, ...]) -> StateRow:
    """A row of :func:`state_query` (the state as text in SQLite, as JSON in PostgreSQL)."""
    app_id, seq, position, state, status, created = raw
    data = parse_json(state) if isinstance(state, str | bytes) else state
    if not isinstance(data, dict):
        raise ValueError("the state is not a JSON object")
    stamp = created.isoformat(sep=" ") if isinstance(created, datetime) else created
    return StateRow(str(app_id), int(seq), str(position), data, str(status), stamp)


def parse_json(text: str | bytes) -> Any:
    """``json.loads``, where nesting too deep for the parser is a ``JSONDecodeError`` like any
    other bad JSON (never a ``RecursionError``)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond, as events and records stamp it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def validate_session_id(session_id: str) -> str:
    """``session_id`` unchanged if it is a valid id (it becomes a folder name), else
    ``InputError``."""
    if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
        shown = (
            session_id if isinstance(session_id, str) and len(session_id) <= 80 else "(too long)"
        )
        raise InputError(
            f"Invalid session id {shown!r}: use 1-64 characters from a-z, 0-9 and '-'."
        )
    return session_id


def new_session_id(idea: str) -> str:
    """A fresh id from the idea's first words and a random suffix (``power-of-8-3fa9c1``)."""
    words = re.findall(r"[a-z0-9]+", idea.lower())[:4]
    stem = "-".join(words)[:40].strip("-") or "idea"
    return f"{stem}-{secrets.token_hex(3)}"
