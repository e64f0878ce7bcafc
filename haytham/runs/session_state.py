"""A session's persisted pipeline state: load and save Burr's SQLite rows, clear stages.

Burr's state in ``state.db`` is the source of truth; these helpers read it without building the
application, write the rows ``clear-from`` and ``fork`` need, and turn storage failures of the
database or the tracking folder into :class:`~haytham.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from burr.core import State

from haytham.errors import HaythamError, InputError, SessionCorrupt
from haytham.pipeline.graph import edges, gate_name
from haytham.pipeline.projection import SNAPSHOT
from haytham.stages import ANCHOR_ACTION, ANCHOR_SOURCE, STAGES, Phase
from haytham.state import RunStatus, SessionState, state_from_row
from haytham.storage.protocol import PARTITION, Session


def save_state(
    files: Session,
    seq: int,
    position: str,
    state: SessionState,
    status: str = "completed",
) -> None:
    """Persist ``state`` as step ``seq`` at ``position`` of the session's Burr state."""
    saver = files.persister()
    saver.save(PARTITION, files.session_id, seq, position, State(state.fields()), status)


# Every step the graph can stand at; a snapshot naming anything else is not trusted.
_POSITIONS = frozenset(name for edge in edges() for name in edge[:2])


@dataclass(frozen=True)
class Recovered:
    """A state found outside this session's ``state.db`` rows, and why it was needed."""

    state: SessionState
    position: str
    sequence_id: int
    reason: str
    status: str = "completed"  # a copied row keeps ``failed``: resume re-runs that step


@dataclass(frozen=True)
class _Row:
    app_id: str
    state: SessionState
    position: str
    sequence_id: int
    status: str


def _latest_row(files: Session, *, other_than: str | None = None) -> _Row | None:
    """The latest persisted row of this session (or, with ``other_than``, of the most recent
    other id). Read-only: it never creates the table or the file, so ``status`` on a damaged
    session writes nothing."""
    rows = files.state_rows(mine=other_than is None, latest=True)
    if not rows:
        return None
    row = rows[0]
    try:
        state = SessionState.of(state_from_row(row.state))
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise SessionCorrupt(files.state_label, str(exc)) from None
    return _Row(row.app_id, state, row.position, row.sequence_id, row.status)


def _db_state(files: Session) -> tuple[SessionState, int] | None:
    row = _latest_row(files)
    return (row.state, row.sequence_id) if row else None


def _snapshot(files: Session) -> dict[str, Any] | None:
    """``state.json`` when it is readable and names a step of the graph, else ``None`` (an
    unreadable one is listed by ``status`` among the broken files)."""
    try:
        snap = files.read_json(SNAPSHOT, default=None)
    except SessionCorrupt:
        return None
    if (
        isinstance(snap, dict)
        and isinstance(snap.get("state"), dict)
        and snap.get("position") in _POSITIONS
    ):
        return snap
    return None


def recover_state(files: Session) -> Recovered | None:
    """The state to rebuild ``state.db`` from, when the session folder holds more than it.

    The database can be deleted, emptied, replaced by an older copy, or belong to another id
    (the folder was copied or renamed). The folder's ``state.json`` (written after every step)
    is then the record; an older session without one falls back to the database's rows of the
    id it was copied from. ``None`` when the database is up to date (or nothing ran yet).
    """
    current = _latest_row(files)
    snap = _snapshot(files)
    if snap is not None:
        seq = snap.get("sequence_id")
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else -1
        if current is None or current.sequence_id < seq:
            why = (
                "state.db has no state for this session"
                if current is None
                else "state.db is older than the session files"
            )
            state = _snapshot_state(files, snap["state"])
            if state is None:
                return None
            return Recovered(state, str(snap["position"]), max(seq, 0), why)
        return None
    if current is not None:
        return None
    other = _latest_row(files, other_than=files.session_id)
    if other is None:
        return None
    state = other.state.model_copy(update={"session_id": files.session_id})
    why = f"state.db holds the state of session {other.app_id} (the folder was copied)"
    return Recovered(state, other.position, other.sequence_id, why, other.status)


def _snapshot_state(files: Session, raw: dict[str, Any]) -> SessionState | None:
    """The typed state of a snapshot under this session's id; ``None`` if it does not fit."""
    try:
        return SessionState.of({**raw, "session_id": files.session_id})
    except ValueError:
        return None


def _has_stage_files(files: Session) -> bool:
    return any(files.exists(f"stages/{s.dir_name}/output.json") for s in STAGES)


def _refuse_without_state(files: Session) -> None:
    """Stage files exist but neither the database nor ``state.json`` says where the session
    stands: any command would start over (or export nothing), so none is run."""
    if _has_stage_files(files):
        raise SessionCorrupt(
            files.state_label,
            "it is missing or empty, and the folder has completed stages but no readable "
            "state.json to rebuild it from; nothing was changed (restore state.db from a backup)",
        )


def ensure_state(files: Session) -> None:
    """Before a command writes: rebuild ``state.db`` from the folder when it lost the state.

    Refuses (one sentence, nothing changed) when stage files exist but neither the database
    nor ``state.json`` can say where the session stands: running it would start over.
    """
    found = recover_state(files)
    if found is not None:
        with storage_errors(files):
            save_state(files, found.sequence_id, found.position, found.state, found.status)
        files.append_event("state_rebuilt", None, reason=found.reason, position=found.position)
        return
    if _latest_row(files) is None:
        _refuse_without_state(files)


def load_state_seq(files: Session) -> tuple[SessionState, int]:
    """The latest persisted state: ``state.db``, or what :func:`recover_state` finds (read-only:
    nothing is written here; a writing command rebuilds the database with :func:`ensure_state`).

    Refuses, like :func:`ensure_state`, a session whose stages exist without any state: an
    empty export or an all-pending status would misreport it."""
    found = recover_state(files)
    if found is not None:
        return found.state, found.sequence_id
    loaded = _db_state(files)
    if loaded:
        return loaded
    _refuse_without_state(files)
    meta = files.read_json("session.json", default={}) or {}
    return SessionState(
        idea=files.read_text("idea.md").strip(),
        appetite=meta.get("appetite"),
        session_id=files.session_id,
    ), -1


@contextlib.contextmanager
def storage_errors(files: Session) -> Iterator[None]:
    """Turn a failed write below us (the Burr state, Burr tracking) into a one-sentence error
    (:meth:`Session.storage_failure` says which errors its storage raises and what they
    mean). The state is saved before the files are projected from it, so what was persisted
    stays consistent and ``resume`` continues from it."""
    try:
        yield
    except HaythamError:
        raise
    except Exception as exc:
        found = files.storage_failure(exc)
        if found is None:
            raise
        raise found from None


def load_state(files: Session) -> SessionState:
    """The session's latest persisted state."""
    return load_state_seq(files)[0]


def load_state_at(files: Session) -> tuple[SessionState, int, str]:
    """The latest persisted state, its sequence id and the step it stands at (call after
    :func:`ensure_state`; a session with no state yet raises :class:`InputError`)."""
    found = recover_state(files)
    if found is not None:
        return found.state, found.sequence_id, found.position
    row = _latest_row(files)
    if row is None:
        raise InputError(f"Session {files.session_id} has not run yet: nothing to re-check.")
    return row.state, row.sequence_id, row.position


def cleared_state(state: SessionState, number: int) -> SessionState:
    """``state`` without stage ``number`` and everything after it (gates reopened)."""
    keep = {s.slug for s in STAGES if s.number < number}
    first_phase = STAGES[number - 1].phase
    live = {p.value for p in Phase if p.gate < first_phase.gate}
    prev = STAGES[number - 2] if number > 1 else None
    update: dict[str, Any] = {
        "outputs": {k: v for k, v in state.outputs.items() if k in keep},
        "stage_meta": {k: v for k, v in state.stage_meta.items() if k in keep},
        "validations": {k: v for k, v in state.validations.items() if k in keep},
        "reviews": {k: v for k, v in state.reviews.items() if k in keep},
        "divergence": {k: v for k, v in state.divergence.items() if k in keep},
        "review_log": [r for r in state.review_log if r.stage in keep],
        "gates": {k: v for k, v in state.gates.items() if k < first_phase.gate},
        "verifications": {k: v for k, v in state.verifications.items() if k in live},
        "rework": {k: v for k, v in state.rework.items() if k in live},
        "status": RunStatus.RUNNING,
        # the first stage of a phase is entered through the previous gate
        "route": STAGES[number - 1].action
        if prev is not None and prev.phase is not first_phase
        else None,
    }
    if STAGES[number - 1].number <= ANCHOR_SOURCE.number:
        update |= {"anchor": None, "anchor_text": ""}
    return state.model_copy(update=update)


def position_before(number: int) -> str:
    """The step a session cleared from stage ``number`` stands at."""
    if number == 1:
        return "start"
    prev, spec = STAGES[number - 2], STAGES[number - 1]
    if prev is ANCHOR_SOURCE:
        return ANCHOR_ACTION
    return gate_name(prev.phase) if prev.phase is not spec.phase else prev.action
