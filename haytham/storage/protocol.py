"""What every session store offers, whichever holds the sessions: the session folder
(:mod:`haytham.storage.folder`, the default) or the shared PostgreSQL database (:mod:`haytham.storage.postgres`,
``HAYTHAM_DATABASE_URL``).

The :class:`Session` and :class:`Store` protocols are all the commands use; the rest is what
both implementations share: session ids, event lines, Burr's state rows (their query, insert and
shape) and :func:`open_store`, which picks the store from the settings.
"""

from __future__ import annotations

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
    folder (:class:`SessionFiles`) or the shared database (:class:`haytham.storage.postgres.PgSession`)."""

    session_id: str

    @property
    def state_label(self) -> str: ...
    def shown(self, rel: str) -> str: ...
    def where(self, rel: str) -> str: ...
    def write_text(self, rel: str, text: str) -> None: ...
    def write_json(self, rel: str, data: Any) -> None: ...
    def read_text(self, rel: str, default: str = "") -> str: ...
    def read_json(self, rel: str, default: Any = None) -> Any: ...
    def exists(self, rel: str) -> bool: ...
    def list(self, folder: str) -> list[str]: ...
    def all_files(self) -> dict[str, str]: ...
    def remove(self, rel: str) -> None: ...
    def tidy(self) -> None: ...
    def append_event(self, type_: str, stage: str | None = None, /, **data: Any) -> Event: ...
    def append_lines(self, lines: list[str]) -> None: ...
    def event_lines(self) -> list[str]: ...
    def events(self) -> list[dict[str, Any]]: ...
    def updated_at(self) -> str: ...
    def is_busy(self) -> bool: ...
    def lock(self, *, check_links: bool = True) -> contextlib.AbstractContextManager[None]: ...
    def persister(self) -> Any: ...
    def state_rows(
        self, *, mine: bool = True, latest: bool = False, completed: bool = False
    ) -> list[StateRow]: ...
    def write_rows(self, rows: list[StateRow]) -> None: ...
    def storage_failure(self, exc: Exception) -> HaythamError | None: ...


class Store(Protocol):
    """The sessions: a folder (:class:`SessionStore`) or the shared database
    (:class:`haytham.storage.postgres.PgStore`)."""

    @property
    def location(self) -> str: ...
    @property
    def tracking_dir(self) -> Path | None: ...
    def create(self, session_id: str) -> Session: ...
    def open(self, session_id: str) -> Session: ...
    def exists(self, session_id: str) -> bool: ...
    def list_ids(self) -> list[str]: ...
    def delete(self, session_id: str) -> None: ...
    def close(self) -> None: ...
    def append_audit(self, line: str, session_id: str, actor: str) -> None: ...
    def audit_lines(self, session_id: str | None, actor: str | None) -> list[str]: ...


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
