"""Background runs for the UI: one thread per session run, owned by a :class:`RunWorker`.

The Streamlit app keeps one worker per service (``st.cache_resource``), so a run started in one
browser tab is the same run seen from another tab or after leaving the page. The worker holds no
module-level state; each job records what it was asked, when, and how it ended. Two runs of one
session cannot overlap: the worker refuses a second job while one is alive, and the service's
per-session lock refuses any other process. Progress is read from the session's files (summary
and events), never from the thread.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from haytham.changes.request import Proposal
from haytham.errors import CassetteMiss, HaythamError, SessionLocked
from haytham.models.limits import SLOT_WAIT_EVENT
from haytham.models.replay import Cassette
from haytham.people.access import Action
from haytham.runs.progress import Estimate, session_provider, stage_estimates
from haytham.runs.service import Haytham, Outcome
from haytham.schemas.intake import AGENT as INTAKE_AGENT
from haytham.schemas.intake import IntakeAnswer
from haytham.stages import ANCHOR_AGENT, BY_SLUG, STAGES
from haytham.validate.grounding import is_grounded

log = logging.getLogger(__name__)

JobState = Literal["queued", "running", "finished", "failed"]
ESTIMATE_TTL_S = 30.0  # past runs change slowly: re-read the sessions folder at most this often
REPLAY_MISS = re.compile(r"No recorded turn in cassette .*? for agent '(?P<agent>[^']+)'", re.S)


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
        """Queued (team mode: waiting for a worker) or running."""
        return self.state in ("queued", "running")

    def elapsed(self, now: float | None = None) -> float:
        """Seconds from start to end (or to ``now`` while running)."""
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return max(0.0, end - self.started_at)


@dataclass(frozen=True)
class StageProgress:
    """The stage running right now (from the session's events), if any."""

    stage: str
    started_at: float
    waiting_since: float | None = None  # its next model call waits for a provider slot

    def elapsed(self, now: float | None = None) -> float:
        """Seconds the stage has been running (to ``now``, default: the current time)."""
        return max(0.0, (now or time.time()) - self.started_at)

    def waited(self, now: float | None = None) -> float:
        """Seconds the stage's call has waited for a provider slot so far (0: not waiting)."""
        if self.waiting_since is None:
            return 0.0
        return max(0.0, (now or time.time()) - self.waiting_since)


@dataclass
class _Slot:
    job: Job
    thread: threading.Thread | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ReplayFit:
    """Whether the replay cassette can answer an idea (checked before anything runs)."""

    ok: bool
    why: str  # one sentence: why not, or (when ``ok``) what the replay will answer with


def replay_miss_text(message: str) -> str | None:
    """A replay cassette's miss (``No recorded turn in cassette … --record …``) in the UI's
    words; ``None`` for any other message."""
    found = REPLAY_MISS.search(message)
    if found is None:
        return None
    agent = found["agent"]
    spec = BY_SLUG.get(agent)
    what = f"{agent} ({spec.title})" if spec else agent
    return (
        f"replay mode has no recorded answer for {what} (the cassette was recorded for another "
        "idea or another path), so running this step again stops here again. Start a new idea "
        "that the cassette covers (New idea offers them as its examples), or use a model provider."
    )


def describe_error(exc: BaseException) -> tuple[str, str]:
    """A one-sentence message and a type name for ``exc`` (never a traceback)."""
    if isinstance(exc, CassetteMiss):
        text = replay_miss_text(str(exc))
        return (text[:1].upper() + text[1:] if text else str(exc)), type(exc).__name__
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
        self._estimates: dict[str | None, tuple[float, dict[str, Estimate]]] = {}

    def for_service(self, service: Haytham) -> RunWorker:
        """This worker (its jobs shared) starting runs through ``service``: the same service
        acting for another caller (:meth:`Haytham.acting_as`), whose checks then apply."""
        view = copy.copy(self)
        view.service = service
        return view

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
        self.service.allow(Action.RUN, session_id)  # refused now, not in the thread
        return self.submit(session_id, label, lambda: self.service.run(session_id))

    def revise(self, session_id: str, proposal: Proposal) -> Job:
        """Apply an accepted change request (:meth:`Haytham.apply_change`: the revised output
        and the revision on the record, refused at once if it can't be applied) and re-run
        every later stage in the background, through the verifiers, to the next gate."""
        if self.is_running(session_id):
            raise SessionLocked(f"Session {session_id} is running; wait for it to stop.")
        self.service.apply_change(session_id, proposal, continue_run=False)
        return self.run(session_id, f"change request to {proposal.stage}")

    def answer(self, session_id: str, answers: list[str]) -> Job:
        """The founder's answers to the intake questions, then the run to the first gate
        (:meth:`Haytham.answer_intake`), in the background."""
        return self.submit(
            session_id, "answers", lambda: self.service.answer_intake(session_id, answers)
        )

    def close(self) -> None:
        """Nothing to release: threads end with their runs."""

    def live_workers(self) -> int | None:
        """How many queue workers are alive (team deployment); ``None``: runs are threads of
        this process, so there is always one."""
        return None

    def fork(self, session_id: str, slug: str) -> str:
        """Fork ``session_id`` from ``slug`` (:meth:`Haytham.fork`) and start the fork's run."""
        new = self.service.fork(session_id, slug)
        self.run(new, "fork")
        return new

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
        """The session's latest job in this process, if it had one."""
        with self._lock:
            slot = self._slots.get(session_id)
            return slot.job if slot else None

    def is_running(self, session_id: str) -> bool:
        """Whether a job of the session is running in this process now."""
        job = self.job(session_id)
        return job is not None and job.alive

    def running(self) -> list[str]:
        """The sessions with a job running in this process now, sorted."""
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
            elif open_stage is None:
                continue
            elif kind == SLOT_WAIT_EVENT:
                open_stage = replace(open_stage, waiting_since=_timestamp(ev.get("ts")))
            elif kind == "model_call":  # the call got its slot and returned
                open_stage = replace(open_stage, waiting_since=None)
            elif kind in ("stage_completed", "stage_failed") and stage == open_stage.stage:
                open_stage = None
        return open_stage

    def view(
        self, session_id: str, status: Callable[[], dict[str, Any]]
    ) -> tuple[Job | None, dict[str, Any], StageProgress | None]:
        """What the Run page draws: the job, ``status()`` (the session's status) and the stage
        running now. Here, read afresh each time (the session's files are on this machine)."""
        return self.job(session_id), status(), self.current_stage(session_id)

    # -- what the pages show besides the session's own files -----------------------------------
    def estimates(self, exclude: str | None = None) -> dict[str, Estimate]:
        """Per stage row, the median wall time of its runs in the other sessions here that ran
        on this provider (:func:`haytham.runs.progress.stage_estimates`); re-read every
        :data:`ESTIMATE_TTL_S` seconds at most."""
        now = time.monotonic()
        with self._lock:
            cached = self._estimates.get(exclude)
        if cached is not None and now - cached[0] < ESTIMATE_TTL_S:
            return cached[1]
        found = stage_estimates(self.service.store, self.service.settings.provider, exclude=exclude)
        with self._lock:
            self._estimates[exclude] = (now, found)
        return found

    def provider_of(self, session_id: str) -> str | None:
        """The provider that answered the session's model calls; a fork that has made none yet
        answers for its parent's (the outputs it inherited). ``None`` when unknown."""
        seen: set[str] = set()
        sid: str | None = session_id
        while sid and sid not in seen:
            seen.add(sid)
            try:
                events = self.service.store.open(sid).events()
            except HaythamError:
                return None
            calls = [ev for ev in events if ev.get("type") == "model_call"]
            forked = next((ev for ev in events if ev.get("type") == "forked"), None)
            if calls or forked is None:
                return session_provider(events)
            sid = str((forked.get("data") or {}).get("source") or "") or None
        return None

    def replay_fit(self, idea: str, agent: str | None = None) -> ReplayFit:
        """With the replay provider: whether the cassette has a turn-1 answer for ``agent``
        (default: the first stage) whose ``when`` conditions all occur in ``idea`` or in the
        stage's instructions, as :meth:`~haytham.models.replay.Cassette.match` decides. Entries
        bound to a recorded request hash can't be checked before the run and don't count. Other
        providers answer any idea."""
        settings = self.service.settings
        if settings.provider != "replay":
            return ReplayFit(True, "")
        if settings.cassette is None:
            return ReplayFit(False, "Replay mode needs a cassette (HAYTHAM_CASSETTE).")
        check_idea = agent is None  # Start: is this the idea the recording was made for?
        agent = agent or STAGES[0].slug
        cassette = self.service.models.cassette(settings.cassette)
        entries = [
            e
            for e in cassette.entries
            if e.agent == agent and e.turn == 1 and e.request_hash is None
        ]
        if not entries:
            return ReplayFit(
                False, f"Replay mode: the cassette has no recorded answer for {_step(agent)}."
            )
        if any(not e.when for e in entries):
            if check_idea and not covers_recorded_idea(cassette, idea, settings.intake):
                return ReplayFit(False, NOT_COVERED)
            return ReplayFit(
                True,
                "Replay mode: the cassette has a recorded run for this idea; the outputs are "
                "that recording, not a model's answers.",
            )
        text = idea + "\n" + _instructions(agent)
        if any(all(c in text for c in e.when) for e in entries):
            return ReplayFit(True, "Replay mode: the cassette has a recorded run for this idea.")
        return ReplayFit(
            False,
            "Replay mode can only run ideas its cassette recorded, and this text matches none "
            "of them: pick the example above.",
        )


def _timestamp(value: Any) -> float:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return time.time()


NOT_COVERED = (
    "Replay mode: the cassette recorded another idea, and this text is not it, so its answers "
    "would describe that idea instead of yours. Pick one of the ideas it covers, or use a "
    "model provider."
)
COVERED_SHARE = 0.5  # of the recorded anchor's source quotes found in the idea


def covers_recorded_idea(cassette: Cassette, idea: str, intake: bool = False) -> bool:
    """Whether a recording made without ``when`` conditions (it answers every request alike)
    was made for ``idea``: at least :data:`COVERED_SHARE` of its concept anchor's source quotes,
    which quote the recorded idea, are found in ``idea`` (the grounding rule). A cassette with
    no recorded anchor can't tell, and covers every idea; with intake on, a recorded intake
    answer that stops (questions, or "not an idea") is replayed first and covers it too."""
    if intake:
        recorded = cassette.recorded_input(INTAKE_AGENT)
        if recorded is not None and IntakeAnswer.model_validate(recorded).classification != (
            "idea"
        ):
            return True
    anchor = cassette.recorded_input(ANCHOR_AGENT) or {}
    quotes = [
        str(inv.get("source") or "")
        for inv in anchor.get("invariants") or []
        if isinstance(inv, dict) and str(inv.get("source") or "").strip()
    ]
    if not quotes:
        return True
    found = sum(is_grounded(q, idea) for q in quotes)
    return found >= COVERED_SHARE * len(quotes)


def _step(agent: str) -> str:
    spec = BY_SLUG.get(agent)
    return spec.title if spec else "the concept anchor" if agent == ANCHOR_AGENT else agent


def _instructions(agent: str) -> str:
    """The system prompt a stage's request carries (replay's ``when`` may match it too)."""
    spec = BY_SLUG.get(agent)
    if spec is None:
        return ""
    from haytham.pipeline.runner import stage_system_prompt  # the pipeline: only when asked

    try:
        return stage_system_prompt(spec)
    except OSError:
        return ""
