"""Burr's persister for a session, loading through the product's own types only.

Burr's SQLite and PostgreSQL persisters load a row with ``State.deserialize``, whose generic
serde imports whatever class path the row names. :class:`TypedPersister` saves through the
store's own persister and loads through :func:`haytham.state.state_from_row`, so a
received session (an import, a row of the shared database) never chooses code to run.
"""

from __future__ import annotations

from typing import Any

from burr.core.persistence import BaseStatePersister, PersistedStateData

from haytham.errors import SessionCorrupt
from haytham.state import state_from_row
from haytham.storage.protocol import Session


class TypedPersister(BaseStatePersister):
    """Saves through ``files.persister()``; loads this session's rows through
    :func:`~haytham.state.state_from_row` (an unknown field or type tag is one
    sentence, :class:`~haytham.errors.SessionCorrupt`)."""

    def __init__(self, files: Session) -> None:
        self.files = files
        self.saver = files.persister()

    def load(
        self,
        partition_key: str | None,
        app_id: str | None,
        sequence_id: int | None = None,
        **_: Any,
    ) -> PersistedStateData | None:
        """The latest row of this session (or its step ``sequence_id``), typed."""
        if app_id is not None and app_id != self.files.session_id:
            return None
        if sequence_id is None:
            rows = self.files.state_rows(latest=True)
        else:
            rows = [r for r in self.files.state_rows() if r.sequence_id == sequence_id]
        if not rows:
            return None
        row = rows[-1]
        try:
            state = state_from_row(row.state)
        except (ValueError, TypeError, RecursionError) as exc:
            raise SessionCorrupt(self.files.state_label, str(exc).splitlines()[0]) from None
        return {
            "partition_key": partition_key or "",
            "app_id": row.app_id,
            "sequence_id": row.sequence_id,
            "position": row.position,
            "state": state,
            "created_at": row.created_at or "",
            "status": row.status,
        }

    def list_app_ids(self, partition_key: str, **_: Any) -> list[str]:
        """Only this session's id (a persister is opened per session)."""
        return [self.files.session_id] if self.files.state_rows(latest=True) else []

    def save(
        self,
        partition_key: str | None,
        app_id: str,
        sequence_id: int,
        position: str,
        state: Any,
        status: Any,
        **kwargs: Any,
    ) -> None:
        """Save through the store's own persister (plain JSON per field)."""
        self.saver.save(partition_key, app_id, sequence_id, position, state, status, **kwargs)
