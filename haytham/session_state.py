"""A session's persisted pipeline state: load and save Burr's SQLite rows, clear stages.

Burr's state in ``state.db`` is the source of truth; these helpers read it without building the
application, write the rows ``clear-from`` and ``fork`` need, and turn storage failures of the
database or the tracking folder into :class:`~haytham.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burr.core import State
from burr.core.persistence import SQLitePersister

from haytham.errors import SessionCorrupt, StorageError
from haytham.pipeline import actions
from haytham.pipeline.graph import PARTITION
from haytham.pipeline.projection import SNAPSHOT
from haytham.stages import STAGES, Phase, get_stage
from haytham.store import (
    SessionFiles,
    storage_error,
)


def _persister(files: SessionFiles) -> SQLitePersister:
    persister = SQLitePersister(
        db_path=str(files.state_db),
        table_name="burr_state",
        connect_kwargs={"check_same_thread": False},
    )
    persister.initialize()
    return persister


def _save_state(files: SessionFiles, seq: int, position: str, state: Mapping[str, Any]) -> None:
    clean = {k: v for k, v in state.items() if not k.startswith("__")}
    _persister(files).save(PARTITION, files.session_id, seq, position, State(clean), "completed")


@dataclass(frozen=True)
class Recovered:
    """A state found outside this session's ``state.db`` rows, and why it was needed."""

    state: dict[str, Any]
    position: str
    sequence_id: int
    reason: str


def _db_state(files: SessionFiles) -> tuple[dict[str, Any], int] | None:
    if not files.state_db.exists():
        return None
    try:
        loaded = _persister(files).load(PARTITION, files.session_id)
    except Exception as exc:  # sqlite3.DatabaseError and friends
        raise SessionCorrupt(str(files.state_db), str(exc)) from None
    return (loaded["state"].get_all(), int(loaded["sequence_id"])) if loaded else None


def recover_state(files: SessionFiles) -> Recovered | None:
    """The state to rebuild ``state.db`` from, when the session folder holds more than it.

    The database can be deleted, emptied, replaced by an older copy, or belong to another id
    (the folder was copied or renamed). The folder's ``state.json`` (written after every step)
    is then the record; an older session without one falls back to the database's rows of the
    id it was copied from. ``None`` when the database is up to date (or nothing ran yet).
    """
    current = _db_state(files)
    snap = files.read_json(SNAPSHOT, default=None)
    if isinstance(snap, dict) and isinstance(snap.get("state"), dict) and snap.get("position"):
        seq = snap.get("sequence_id")
        seq = int(seq) if isinstance(seq, int) else -1
        if current is None or current[1] < seq:
            why = (
                "state.db has no state for this session"
                if current is None
                else ("state.db is older than the session files")
            )
            state = {**snap["state"], "session_id": files.session_id}
            return Recovered(state, str(snap["position"]), max(seq, 0), why)
        return None
    if current is not None or not files.state_db.exists():
        return None
    persister = _persister(files)
    for other in persister.list_app_ids(PARTITION):
        loaded = persister.load(PARTITION, other)
        if other != files.session_id and loaded:
            state = {**loaded["state"].get_all(), "session_id": files.session_id}
            why = f"state.db holds the state of session {other} (the folder was copied)"
            return Recovered(state, str(loaded["position"]), int(loaded["sequence_id"]), why)
    return None


def _has_stage_files(files: SessionFiles) -> bool:
    return any((files.root / "stages").glob("*/output.json"))


def ensure_state(files: SessionFiles) -> None:
    """Before a command writes: rebuild ``state.db`` from the folder when it lost the state.

    Refuses (one sentence, nothing changed) when stage files exist but neither the database
    nor ``state.json`` can say where the session stands: running it would start over.
    """
    found = recover_state(files)
    if found is not None:
        with storage_errors(files):
            _save_state(files, found.sequence_id, found.position, found.state)
        files.append_event("state_rebuilt", None, reason=found.reason, position=found.position)
        return
    if _db_state(files) is None and _has_stage_files(files):
        raise SessionCorrupt(
            str(files.state_db),
            "it is missing or empty, and the folder has completed stages but no state.json to "
            "rebuild it from; nothing was changed (restore state.db from a backup)",
        )


def _load_state_seq(files: SessionFiles) -> tuple[dict[str, Any], int]:
    """The latest persisted state: ``state.db``, or what :func:`recover_state` finds (read-only:
    nothing is written here; a writing command rebuilds the database with :func:`ensure_state`)."""
    found = recover_state(files)
    if found is not None:
        return found.state, found.sequence_id
    loaded = _db_state(files)
    if loaded:
        return loaded
    meta = files.read_json("session.json", default={}) or {}
    return {
        **actions.INITIAL_STATE,
        "idea": files.read_text("idea.md").strip(),
        "appetite": meta.get("appetite"),
        "session_id": files.session_id,
    }, -1


_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


@contextlib.contextmanager
def storage_errors(files: SessionFiles) -> Iterator[None]:
    """Turn a failed write below us (SQLite state, Burr tracking) into a one-sentence error.

    Our own files already raise :class:`StorageError`; SQLite and Burr's tracker raise their own
    errors when the disk is full or the folder read-only. The state is saved before the files are
    projected from it, so what was persisted stays consistent and ``resume`` continues from it.
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc)
        why = (
            "the disk is full"
            if "full" in text
            else "the sessions folder is not writable"
            if "readonly" in text or "read-only" in text
            else text
        )
        raise StorageError(
            f"Could not write {files.state_db}: {why}. The last saved step is "
            f"kept; free space or fix permissions, then `haytham resume "
            f"{files.session_id}`."
        ) from None
    except sqlite3.DatabaseError as exc:  # not a database any more (truncated, overwritten)
        raise SessionCorrupt(str(files.state_db), str(exc)) from None
    except OSError as exc:
        if exc.errno not in _STORAGE_ERRNOS:
            raise
        where = Path(exc.filename) if exc.filename else files.root.parent  # e.g. Burr tracking
        raise storage_error(where, exc) from None


def _load_state(files: SessionFiles) -> dict[str, Any]:
    return _load_state_seq(files)[0]


def cleared_state(state: Mapping[str, Any], number: int) -> dict[str, Any]:
    """``state`` without stage ``number`` and everything after it (gates reopened)."""
    keep = {s.slug for s in STAGES if s.number < number}
    new = dict(state)
    for key in ("outputs", "stage_meta", "validations", "reviews", "divergence"):
        new[key] = {k: v for k, v in (state.get(key) or {}).items() if k in keep}
    new["review_log"] = [r for r in state.get("review_log") or [] if r.get("stage") in keep]
    first_phase = next(s.phase for s in STAGES if s.number == number)
    live = {p.value for p in Phase if p.gate < first_phase.gate}
    new["gates"] = {
        k: v for k, v in (state.get("gates") or {}).items() if int(k) < first_phase.gate
    }
    new["verifications"] = {
        k: v for k, v in (state.get("verifications") or {}).items() if k in live
    }
    new["rework"] = {k: v for k, v in (state.get("rework") or {}).items() if k in live}
    if number == 1:
        new["anchor"], new["anchor_text"] = None, ""
    new["constraints"] = actions.constraints_of(new)
    new["status"], new["route"] = "running", None
    if number > 1:
        prev = STAGES[number - 2]
        if prev.phase is not first_phase:  # first stage of a phase: enter through its gate
            new["route"] = get_stage(STAGES[number - 1].slug).action
    return new


def _position_before(number: int) -> str:
    if number == 1:
        return "start"
    if number == 2:
        return "anchor_extraction"
    prev, spec = STAGES[number - 2], STAGES[number - 1]
    return f"gate_{prev.phase.gate}" if prev.phase is not spec.phase else prev.action
