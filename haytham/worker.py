"""Background runs for the UI: one thread per session run, owned by a :class:`RunWorker`.

The Streamlit app keeps one worker per service (``st.cache_resource``), so a run started in one
browser tab is the same run seen from another tab or after leaving the page. The worker holds no
module-level state; each job records what it was asked, when, and how it ended. Two runs of one
session cannot overlap: the worker refuses a second job while one is alive, and the service's
per-session lock refuses any other process. Progress is read from the session's files (summary
and events), never from the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from haytham.errors import HaythamError, SessionLocked
from haytham.service import Haytham, Outcome

log = logging.getLogger(__name__)

JobState = Literal["running", "finished", "failed"]


@dataclass(frozen=True)
class Job:
    """One background operation on a session, as last seen (an immutable snapshot)."""

    session_id: str
    label: str
    state: JobState
    started_at: float
    ended_at: float | None = None
    outcome: Outcome | None = None
    error: str | None = None
    error_type: str | None = None

    @property
    def alive(self) -> bool:
        return self.state == "running"

    def elapsed(self, now: float | None = None) -> float:
        """Seconds from start to end (or to ``now`` while running)."""
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)


@dataclass(frozen=True)
class StageProgress:
    """The stage running right now (from the session's events), if any."""

    stage: str
    started_at: float

    def elapsed(self, now: float | None = None) -> float:
        return max(0.0, (now or time.time()) - self.started_at)


@dataclass
class _Slot:
    job: Job
    thread: threading.Thread | None = field(default=None, repr=False)


def describe_error(exc: BaseException) -> tuple[str, str]:
    """A one-sentence message and a type name for ``exc`` (never a traceback)."""
    if isinstance(exc, HaythamError):
        return str(exc), type(exc).__name__
    return (
        f"Unexpected error ({type(exc).__name__}): {exc}. The session's saved work is kept; "
        "resume to try again.",
        type(exc).__name__,
    )


class RunWorker:
    """Runs service operations for sessions in background threads, one at a time per session."""

    def __init__(self, service: Haytham) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}

    # -- starting ------------------------------------------------------------------------------
    def submit(self, session_id: str, label: str, fn: Callable[[], Outcome]) -> Job:
        """Start ``fn`` in a thread for ``session_id``; refuses while that session's job runs."""
        with self._lock:
            slot = self._slots.get(session_id)
            if slot is not None and slot.job.alive:
                raise SessionLocked(
                    f"Session {session_id} is already running ({slot.job.label}); "
                    "wait for it to finish."
                )
            job = Job(session_id=session_id, label=label, state="running", started_at=time.time())
            thread = threading.Thread(
                target=self._work,
                args=(session_id, fn),
                name=f"haytham-run-{session_id}",
                daemon=True,
            )
            self._slots[session_id] = _Slot(job, thread)
            thread.start()
            return job

    def run(self, session_id: str, label: str = "run") -> Job:
        """Run (or resume) ``session_id`` until the next gate, the end, or an error."""
        return self.submit(session_id, label, lambda: self.service.run(session_id))

    def _work(self, session_id: str, fn: Callable[[], Outcome]) -> None:
        try:
            outcome = fn()
        except Exception as exc:  # every failure becomes a message on the job
            message, kind = describe_error(exc)
            if not isinstance(exc, HaythamError):
                log.exception("background run of %s failed", session_id)
            self._finish(session_id, state="failed", error=message, error_type=kind)
        else:
            self._finish(session_id, state="finished", outcome=outcome)

    def _finish(self, session_id: str, **changes: Any) -> None:
        with self._lock:
            slot = self._slots[session_id]
            slot.job = replace(slot.job, ended_at=time.time(), **changes)

    # -- reading -------------------------------------------------------------------------------
    def job(self, session_id: str) -> Job | None:
        with self._lock:
            slot = self._slots.get(session_id)
            return slot.job if slot else None

    def is_running(self, session_id: str) -> bool:
        job = self.job(session_id)
        return job is not None and job.alive

    def running(self) -> list[str]:
        with self._lock:
            return sorted(s for s, slot in self._slots.items() if slot.job.alive)

    def forget(self, session_id: str) -> None:
        """Drop a finished job (e.g. after the session is deleted)."""
        with self._lock:
            slot = self._slots.get(session_id)
            if slot is not None and not slot.job.alive:
                del self._slots[session_id]

    def wait(self, session_id: str, timeout: float | None = None) -> Job | None:
        """Block until the session's job ends (tests and benchmarks); returns the last snapshot."""
        with self._lock:
            slot = self._slots.get(session_id)
            thread = slot.thread if slot else None
        if thread is not None:
            thread.join(timeout)
        return self.job(session_id)

    def current_stage(self, session_id: str) -> StageProgress | None:
        """The latest stage started and not yet completed or failed, while a job is alive."""
        if not self.is_running(session_id):
            return None
        events = self.service.store.open(session_id).events()
        open_stage: StageProgress | None = None
        for ev in events:
            kind, stage = ev.get("type"), ev.get("stage")
            if kind == "stage_started" and stage:
                open_stage = StageProgress(stage, _timestamp(ev.get("ts")))
            elif (
                kind in ("stage_completed", "stage_failed")
                and open_stage
                and stage == open_stage.stage
            ):
                open_stage = None
        return open_stage


def _timestamp(value: Any) -> float:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return time.time()
