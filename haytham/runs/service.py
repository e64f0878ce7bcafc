"""What the CLI and the UI call. No pipeline logic lives in either of them.

One :class:`Haytham` per process (it owns the model runtime: the local llama-server, open
cassettes). Every operation on a session takes that session's lock, builds its Burr application
from the session's SQLite state, does its work and releases the lock — so sessions run
concurrently and two processes never work on one session at once.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from burr.core import Application

from haytham.agents.caller import ModelCaller
from haytham.changes.request import (
    AGENT as CHANGE_AGENT,
)
from haytham.changes.request import (
    Proposal,
    change_context,
    proposal_model,
    propose,
    recomputed,
    refusal,
    revisable,
    revised_state,
)
from haytham.config import Settings
from haytham.errors import (
    AccessDenied,
    GateError,
    HaythamError,
    InputError,
    SessionLocked,
    StorageError,
)
from haytham.idea.checks import validate_appetite, validate_idea
from haytham.idea.intake import clean_answers
from haytham.models.factory import ModelRuntime
from haytham.models.providers import check_provider
from haytham.people import audit
from haytham.people.access import GATE_ACTIONS, Action, Actor, PolicySource, default_actor
from haytham.people.notify import Notice, Notifier
from haytham.pipeline import actions
from haytham.pipeline.commands import (
    Approve,
    Clarify,
    ClarifyAll,
    GateCommand,
    Override,
    Reject,
    Rework,
    parse_command,
)
from haytham.pipeline.gates import apply_command, open_blocking, phase_for_gate
from haytham.pipeline.graph import build_application, gate_name, graph_dot
from haytham.pipeline.projection import Projector
from haytham.pipeline.recheck import recheck_phase
from haytham.pipeline.runner import PostValidator, StageRunner, load_prompt, stage_system_prompt
from haytham.pipeline.staleness import (
    describe,
    earlier_inputs,
    stage_fingerprint,
    stale_checks,
    stale_phases,
)
from haytham.reports.export import export, json_text
from haytham.reports.history import GateHistory, gate_history, load_steps
from haytham.runs.progress import LiveCall, LiveCalls
from haytham.runs.session_state import (
    cleared_state,
    ensure_state,
    load_state,
    load_state_at,
    load_state_seq,
    position_before,
    save_state,
    storage_errors,
)
from haytham.runs.status import session_status
from haytham.runs.transfer import SESSION_FORMAT, dump_session, load_session, read_bundle
from haytham.schemas.gate import Recheck
from haytham.schemas.intake import AGENT as INTAKE_ACTION
from haytham.schemas.intake import IntakeRecord
from haytham.stages import Phase, get_stage, phase_stages
from haytham.stages.render import render_stage
from haytham.state import RunStatus, SessionState, gate_of
from haytham.storage.backends import open_store, team_packages_missing
from haytham.storage.protocol import (
    Session,
    new_session_id,
    now,
    validate_session_id,
)

VerifierFactory = Callable[[Settings, ModelRuntime, Session], actions.Verifier | None]
MAX_REQUEST_CHARS = 2000


@dataclass
class Outcome:
    """Where a session stands after an operation."""

    session_id: str
    status: str
    gate: int | None = None
    next_action: str | None = None
    messages: list[str] = field(default_factory=list)


class Haytham:
    """The product's one service: every CLI command and UI page calls it. It checks who calls
    (:mod:`haytham.people.access`), runs sessions through their graph, applies the reviewer's
    commands at the gates, and reads, exports, forks and changes sessions."""

    def __init__(
        self,
        settings: Settings,
        *,
        verifier_factory: VerifierFactory | None,
        post_validator: PostValidator | None,
        models: ModelRuntime | None = None,
        tracking: bool = True,
        actor: Actor | None = None,
    ) -> None:
        """Built by :func:`haytham.app.make_service`, which wires the verifiers and validators
        every session runs with; both are required here so that a service without them is
        never built by accident. ``actor`` is who calls (default: the local user on one
        machine; see :func:`haytham.people.access.default_actor`); :meth:`acting_as` binds another."""
        self.settings = settings
        self.policy = PolicySource(settings.access_file, trusted_network=settings.trusted_network)
        self.actor = actor or default_actor(settings, self.policy)
        self._shared = False  # a view made by acting_as: closing it closes nothing
        self.store = open_store(settings)
        self.notifier = Notifier.from_settings(settings)
        self._own_models = models is None
        self.models = models or ModelRuntime(settings)
        self.verifier_factory = verifier_factory
        self.post_validator = post_validator
        self.tracking = tracking
        self.live = LiveCalls()  # calls streaming now, per session (for the UI's Run page)

    def close(self) -> None:
        """Close the store and the model runtime this service owns (a view made by
        :meth:`acting_as` closes nothing)."""
        if self._shared:
            return
        self.store.close()
        if self._own_models:
            self.models.close()

    def __enter__(self) -> Haytham:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- who calls (haytham/people/access.py) --------------------------------------------------------
    def acting_as(self, actor: Actor) -> Haytham:
        """This service (its store, models and live calls shared) acting for ``actor``: every
        method checks what ``actor`` may do. Closing the view closes nothing."""
        view = copy.copy(self)
        view.actor = actor
        view._shared = True
        return view

    def _refusal(self, action: Action, files: Session | None) -> str | None:
        policy = self.policy.current()
        if "admin" in policy.roles(self.actor):  # admins need no owner (nor a readable file)
            return None
        meta = files.read_json("session.json", default={}) if files is not None else None
        owner = meta.get("owner") if isinstance(meta, dict) else None
        return policy.refusal(self.actor, action, owner if isinstance(owner, str) else None)

    def allow(self, action: Action, session_id: str | None = None) -> None:
        """Raise :class:`AccessDenied` (one sentence, nothing changed) unless the caller may do
        ``action`` to ``session_id`` (``None``: no session, e.g. starting one)."""
        files = self.store.open(session_id) if session_id is not None else None
        why = self._refusal(action, files)
        if why:
            raise AccessDenied(why)

    def can(self, action: Action, session_id: str | None = None) -> bool:
        """Whether :meth:`allow` would let the caller do ``action`` (for pages to reflect it)."""
        try:
            self.allow(action, session_id)
        except AccessDenied:
            return False
        return True

    def roles(self) -> list[str]:
        """The caller's roles now (founder, reviewer, admin), for pages to show."""
        return sorted(self.policy.current().roles(self.actor))

    def _record(self, action: str, session_id: str, **detail: Any) -> None:
        audit.record(self.store, self.actor, action, session_id, **detail)

    def decisions(
        self, session_id: str | None = None, user: str | None = None
    ) -> list[audit.Decision]:
        """The decision record: a session's (for whoever may open it), or everyone's and any
        user's (admins only), oldest first."""
        if session_id is not None and user is None and not self.can(Action.ADMIN):
            self.allow(Action.READ, session_id)
        else:  # everyone's, anyone's, and a deleted session's record
            self.allow(Action.ADMIN)
        return audit.decisions(self.store, session_id=session_id, user=user)

    # -- sessions -------------------------------------------------------------------------------
    def create_session(
        self,
        idea: str,
        *,
        appetite: str | None = None,
        session_id: str | None = None,
        skip_intake: bool = False,
    ) -> str:
        """Validate everything first; only then create the folder. ``skip_intake`` (recorded in
        ``session.json``) starts at stage 1 without classifying the text."""
        self.allow(Action.CREATE)
        text = validate_idea(idea)
        chosen = validate_appetite(appetite)
        sid = validate_session_id(session_id) if session_id else new_session_id(text)
        files = self.store.create(sid)
        try:
            files.write_text("idea.md", text + "\n")
            files.write_json(
                "session.json",
                {"session_id": sid, "created_at": now(), "appetite": chosen, "schema_version": 1}
                | {"owner": self.actor.on_behalf_of or self.actor.id}
                | ({"skip_intake": True} if skip_intake else {}),
            )
            files.append_event(
                "session_created", None, appetite=chosen, provider=self.settings.provider
            )
        except BaseException:  # nothing half-created: a session exists whole or not at all
            self.store.delete(sid)
            raise
        self._record("create", sid)
        return sid

    def list_sessions(self) -> list[str]:
        """The sessions the caller may open (a founder's own, a reviewer's assigned ones)."""
        found = []
        for sid in self.store.list_ids():
            try:
                if not self._refusal(Action.READ, self.store.open(sid)):
                    found.append(sid)
            except HaythamError:  # a broken session: listed to those who need no owner
                continue
        return found

    def session_rows(self) -> list[dict[str, Any]] | None:
        """Every session as the Sessions page lists it, read in one query where the store can
        (the shared database: :meth:`haytham.storage.postgres.PgStore.session_rows`); ``None`` for the
        sessions folder, whose pages read each session's status from its files. Like
        :meth:`list_sessions`, only the sessions the caller may open (from each row's owner)."""
        rows = getattr(self.store, "session_rows", None)
        if rows is None:
            return None
        policy = self.policy.current()
        if "admin" in policy.roles(self.actor):
            return list(rows())
        return [
            r
            for r in rows()
            if not policy.refusal(self.actor, Action.READ, r["owner"] if r["owner"] else None)
        ]

    def delete_session(self, session_id: str) -> None:
        """Delete the session (its decision record stays)."""
        self.allow(Action.DELETE, session_id)
        self.store.delete(session_id)
        self._record("delete", session_id)

    def _app(self, files: Session) -> Application:
        files.tidy()  # temp files of a process killed mid-write (we hold the lock)
        meta = files.read_json("session.json", default={}) or {}
        runner = StageRunner(
            self.settings,
            self.models,
            files,
            self.post_validator,
            on_progress=self.live.reporter(files.session_id),
            on_text=self.live.text_sink(files.session_id),
        )
        verifier = (
            self.verifier_factory(self.settings, self.models, files)
            if self.verifier_factory
            else None
        )
        where = self.store.tracking_dir
        tracking = str(where) if self.tracking and where is not None else None
        ensure_state(files)  # a lost or copied state.db is rebuilt, never started over
        with storage_errors(files):
            return build_application(
                runner,
                verifier,
                app_id=files.session_id,
                tracking_dir=tracking,
                initial_state=SessionState(
                    idea=files.read_text("idea.md").strip(),
                    appetite=meta.get("appetite"),
                    session_id=files.session_id,
                    intake=IntakeRecord(status="skipped") if meta.get("skip_intake") else None,
                ),
            )

    def load_state(self, session_id: str) -> SessionState:
        """The latest persisted state without building the application (cheap, read-only)."""
        self.allow(Action.READ, session_id)
        return load_state(self.store.open(session_id))

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, session_id: str, *, until: int | None = None, auto_approve: bool = False
    ) -> Outcome:
        """Run until a gate needs a person (or ``until``), the end, or an error."""
        self.allow(Action.RUN, session_id)
        check_provider(self.settings)
        files = self.store.open(session_id)
        with files.lock():
            if self.post_validator is not None:  # the embedder loads while stage 1 runs
                self.post_validator.start_loading()
            app = self._app(files)
            return self._advance(files, app, until=until, auto_approve=auto_approve)

    resume = run

    def classify(self, session_id: str) -> Outcome:
        """Run a new session's intake step alone (the UI waits for it before starting the run
        in the background): ``waiting_intake`` or ``unrelated`` when it stops there; anything
        else means :meth:`run` goes on to stage 1. A session past intake is left as it is."""
        self.allow(Action.RUN, session_id)
        files = self.store.open(session_id)
        with files.lock():
            app = self._app(files)
            nxt = app.get_next_action()
            state = SessionState.of(app.state)
            fresh = nxt is not None and nxt.name in ("start", INTAKE_ACTION)
            if fresh and state.status is not RunStatus.INTAKE:
                check_provider(self.settings)
                with storage_errors(files):
                    app.run(halt_after=[INTAKE_ACTION])
                state = SessionState.of(app.state)
            nxt = app.get_next_action()
            return Outcome(session_id, state.status, next_action=nxt.name if nxt else None)

    def _advance(
        self, files: Session, app: Application, *, until: int | None, auto_approve: bool
    ) -> Outcome:
        """Run on (:meth:`_steps`), telling the assigned reviewers when the session stops at a
        gate or fails (:mod:`haytham.people.notify`; never waits for the delivery)."""
        try:
            outcome = self._steps(files, app, until=until, auto_approve=auto_approve)
        except (SessionLocked, AccessDenied):
            raise
        except Exception as exc:
            self._tell(files, "failed", None, str(exc) if isinstance(exc, HaythamError) else "")
            raise
        if outcome.gate is not None:
            self._tell(files, "gate", outcome.gate, "")
        return outcome

    def _tell(self, files: Session, event: str, gate: int | None, why: str) -> None:
        if self.notifier is None:
            return
        try:
            meta = files.read_json("session.json", default={}) or {}
            owner = meta.get("owner") if isinstance(meta.get("owner"), str) else None
            reviewers = tuple(self.policy.current().reviewers_of(owner))
        except HaythamError:
            owner, reviewers = None, ()
        sid = files.session_id
        text = (
            f"Session {sid} waits at Gate {gate} · {phase_for_gate(gate).value} for a decision."
            if gate is not None
            else f"The run of session {sid} failed" + (f": {why}" if why else ".")
        )
        notice = Notice(event, sid, text, gate=gate, owner=owner, recipients=reviewers)  # type: ignore[arg-type]
        self.notifier.send(notice)

    def _steps(
        self, files: Session, app: Application, *, until: int | None, auto_approve: bool
    ) -> Outcome:
        messages: list[str] = []
        gates = {gate_name(p): p.gate for p in Phase}
        while True:
            nxt = app.get_next_action()
            state = SessionState.of(app.state)
            if nxt is None:
                return Outcome(files.session_id, state.status, messages=messages)
            if nxt.name == INTAKE_ACTION and state.status is RunStatus.INTAKE:
                return Outcome(
                    files.session_id, state.status, next_action=nxt.name, messages=messages
                )
            if nxt.name in gates:
                gate = gates[nxt.name]
                if not auto_approve or (until is not None and gate >= until):
                    return Outcome(
                        files.session_id,
                        state.status,
                        gate=gate,
                        next_action=nxt.name,
                        messages=messages,
                    )
                clarify = self._auto_clarify(state, gate)
                if clarify is not None:
                    with storage_errors(files):
                        app.step(inputs={"command": clarify})
                    files.append_event("gate_command", None, gate=gate, **_auto_event(clarify))
                    state = SessionState.of(app.state)
                if stale_checks(state, phase_for_gate(gate)):
                    # the designed flow: the clarified anchor is re-checked, nothing re-run
                    why = "after the clarification" if clarify else "checks were stale"
                    self._recheck(files, [phase_for_gate(gate)], why=why, auto=True)
                    app = self._app(files)
                    state = SessionState.of(app.state)
                for command in self._auto_commands(state, gate):
                    with storage_errors(files):
                        app.step(inputs={"command": command})
                    files.append_event("gate_command", None, gate=gate, **_auto_event(command))
                    self._record(
                        command.kind,
                        files.session_id,
                        gate=gate,
                        round_=gate_of(state.gates, phase_for_gate(gate)).round,
                        **command.given(),
                    )
                messages.append(f"gate {gate} auto-approved")
                continue
            with storage_errors(files):
                app.run(halt_before=list(gates), halt_after=["end", INTAKE_ACTION])

    @staticmethod
    def _auto_clarify(state: SessionState, gate: int) -> ClarifyAll | None:
        """--auto-approve's choice at Gate 1: every open ambiguity's first option (recorded as
        automatic, keeping the extractor's confidence and the option's pin)."""
        if phase_for_gate(gate) is not Phase.WHY or state.anchor is None:
            return None
        pending = state.anchor.open_ambiguities()
        if not pending:
            return None
        return ClarifyAll(auto=True, choices={i.property: "1" for i in pending})

    @staticmethod
    def _auto_commands(state: SessionState, gate: int) -> list[GateCommand]:
        """--auto-approve's commands at ``gate``: override whatever blocks it, then approve."""
        phase = phase_for_gate(gate)
        commands: list[GateCommand] = []
        if open_blocking(state, phase):
            commands.append(Override(reason="auto-approve", auto=True))
        commands.append(Approve(note="auto-approve"))
        return commands

    def answer_intake(
        self, session_id: str, answers: list[str], *, continue_run: bool = True
    ) -> Outcome:
        """The founder's answers to the intake questions (one per question, in order; ``""``
        or a missing one skips it; none at all skips them all): they become the "Founder's
        clarifications" section of the idea, and the run goes on to stage 1 (no second
        classification)."""
        self.allow(Action.RUN, session_id)
        files = self.store.open(session_id)
        with files.lock():
            app = self._app(files)
            state = SessionState.of(app.state)
            nxt = app.get_next_action()
            if state.status is not RunStatus.INTAKE or nxt is None or nxt.name != INTAKE_ACTION:
                raise InputError(
                    f"Session {session_id} is not waiting for answers to intake questions "
                    f"(status: {state.status.value})."
                )
            if state.intake is not None and state.intake.answer is not None:  # refuse first
                clean_answers(list(answers), state.intake.answer.questions)
            with storage_errors(files):
                app.step(inputs={"answers": list(answers)})
            record = SessionState.of(app.state).intake
            answered = sum(1 for a in (record.answers if record else []) if a)
            files.append_event("intake_answered", INTAKE_ACTION, answered=answered)
            if not continue_run:
                return Outcome(session_id, SessionState.of(app.state).status)
            check_provider(self.settings)
            return self._advance(files, app, until=None, auto_approve=False)

    def decide(
        self,
        session_id: str,
        gate: int,
        command: GateCommand | Mapping[str, Any],
        *,
        continue_run: bool = True,
    ) -> Outcome:
        """Apply a reviewer's command at ``gate``; on approve/rework, run on to the next gate.

        ``command`` is a typed :data:`~haytham.pipeline.commands.GateCommand` or the mapping
        the pages send (``{"kind": "override", "reason": …}``), parsed here, once: a bad one is
        refused with one sentence before anything is read or written."""
        phase = phase_for_gate(gate)
        typed = parse_command(command)
        self.allow(GATE_ACTIONS.get(typed.kind, Action.DECIDE), session_id)
        files = self.store.open(session_id)
        with files.lock():
            app = self._app(files)
            nxt = app.get_next_action()
            here = nxt.name if nxt else "the end"
            if here != gate_name(phase):
                raise GateError(
                    f"Session {session_id} is not waiting at Gate {gate} (next step: {here})."
                )
            by = typed.by or self.actor.label
            typed = typed.model_copy(update={"by": by})
            before = SessionState.of(app.state)
            # refused here, before the step, so that a refusal reaches no hook or tracker
            apply_command(before, phase, typed)
            with storage_errors(files):
                app.step(inputs={"command": typed})
            given = typed.given()
            files.append_event("gate_command", None, gate=gate, **given, command=typed.kind)
            given.pop("by")
            self._record(
                typed.kind,
                session_id,
                gate=gate,
                round_=gate_of(before.gates, phase).round,
                **given,
            )
            after = SessionState.of(app.state)
            if isinstance(typed, Clarify | ClarifyAll) and stale_checks(after, phase):
                # the designed flow: the phase is re-checked against the clarified anchor
                check_provider(self.settings)
                self._recheck(files, [phase], why="after the clarification", by=by)
                app = self._app(files)
            moved = app.get_next_action()
            if continue_run and moved is not None and moved.name != gate_name(phase):
                check_provider(self.settings)
                return self._advance(files, app, until=None, auto_approve=False)
            return Outcome(
                session_id,
                SessionState.of(app.state).status,
                gate=gate if moved and moved.name == gate_name(phase) else None,
                next_action=moved.name if moved else None,
            )

    def approve(
        self, sid: str, gate: int, note: str = "", override_stale: str = "", **kw: Any
    ) -> Outcome:
        """Approve ``gate``; refused while its checks are stale unless ``override_stale`` gives
        the reason to approve them anyway (logged at the gate as an override)."""
        command = Approve(note=note)
        if override_stale.strip():
            command = Approve(note=note, override_stale=override_stale.strip())
        return self.decide(sid, gate, command, **kw)

    # -- re-check --------------------------------------------------------------------------------
    def recheck(self, session_id: str, gate: int | None = None) -> Outcome:
        """Run the validators and the verifier again against the current anchor, for ``gate``'s
        phase or (without ``gate``) every phase whose checks are stale; no stage re-runs. The
        session stays where it is; the gate record logs the re-check."""
        self.allow(Action.DECIDE, session_id)
        files = self.store.open(session_id)
        with files.lock():
            ensure_state(files)
            state, _, _ = load_state_at(files)
            if gate is not None:
                phases = [phase_for_gate(gate)]
                if not any(s.slug in state.outputs for s in phase_stages(phases[0])):
                    raise InputError(
                        f"Gate {gate}'s phase has not run yet in session {session_id}: "
                        "nothing to re-check."
                    )
            else:
                phases = stale_phases(state)
                if not phases:
                    raise InputError(
                        f"Nothing to re-check: no check of session {session_id} is stale."
                    )
            check_provider(self.settings)
            stale = stale_checks(state)
            why = describe(stale) if stale else "asked by the reviewer"
            new = self._recheck(files, phases, why=why, by=self.actor.label)
        left = stale_checks(new)
        messages = [f"re-checked {', '.join(p.value for p in phases)}"]
        if left:
            messages.append(f"still stale: {describe(left)}")
        return Outcome(session_id, new.status, gate=new.status.gate, messages=messages)

    def _recheck(
        self,
        files: Session,
        phases: list[Phase],
        *,
        why: str,
        by: str | None = None,
        auto: bool = False,
    ) -> SessionState:
        """Re-check ``phases`` (lock held) and persist the result at the same step."""
        ensure_state(files)
        state, seq, position = load_state_at(files)
        verifier = (
            self.verifier_factory(self.settings, self.models, files)
            if self.verifier_factory
            else None
        )
        tool_calls = [e for e in files.events() if e.get("type") == "tool_call"]
        for phase in phases:
            state = recheck_phase(
                state,
                phase,
                verifier=verifier,
                post_validator=self.post_validator,
                tool_calls=tool_calls,
            )
            verification = state.verifications[phase.value]
            if phase.gate in state.gates:
                record = gate_of(state.gates, phase)
                done = Recheck(
                    at=now(),
                    by="auto-approve" if auto else by,
                    why=why,
                    verification=verification.status,
                )
                record = record.model_copy(update={"rechecks": [*record.rechecks, done]})
                state = state.model_copy(update={"gates": {**state.gates, phase.gate: record}})
            files.append_event(
                "rechecked",
                None,
                phase=phase.value,
                why=why,
                verification=verification.status,
                blocking=len(verification.blocking()),
            )
        with storage_errors(files):
            save_state(files, seq + 1, position, state)
        Projector(files).project(state, position=position, sequence_id=seq + 1)
        return state

    def reject(self, sid: str, gate: int, note: str = "", **kw: Any) -> Outcome:
        """Reject the idea at ``gate``: the session ends (``note``: why, on the record)."""
        return self.decide(sid, gate, Reject(note=note), **kw)

    def rework(self, sid: str, stage: str, feedback: str, **kw: Any) -> Outcome:
        """Send ``stage`` back with ``feedback`` at its phase's gate; the phase runs again."""
        gate = get_stage(stage).phase.gate
        return self.decide(sid, gate, Rework(stage=stage, feedback=feedback), **kw)

    def override(self, sid: str, gate: int, reason: str, target: str | None = None) -> Outcome:
        """Override the open blocking item ``target`` at ``gate`` (all of them without one)."""
        return self.decide(sid, gate, Override(reason=reason, target=target))

    def clarify(self, sid: str, invariant: str, choice: str) -> Outcome:
        """Resolve one ambiguous invariant of the concept anchor at Gate 1."""
        return self.decide(sid, 1, Clarify(invariant=invariant, choice=choice))

    # -- reading ---------------------------------------------------------------------------------
    def status(self, session_id: str) -> dict[str, Any]:
        """Where the session stands, as ``haytham status`` prints it (see
        :func:`haytham.runs.status.session_status`)."""
        self.allow(Action.READ, session_id)
        files = self.store.open(session_id)
        return session_status(files, load_state(files))

    def show(self, session_id: str, stage: str) -> str:
        """A stage's output as Markdown, or the rendered anchor for ``stage="anchor"``."""
        state = self.load_state(session_id)  # checks the caller
        if stage == "anchor":
            if not state.anchor_text:
                raise InputError(f"Session {session_id} has no concept anchor yet.")
            return state.anchor_text
        spec = get_stage(stage)
        output = state.outputs.get(spec.slug)
        if output is None:
            raise InputError(f"Stage {spec.slug} has not run in session {session_id}.")
        return render_stage(spec, output.model_dump(mode="json"))

    def export(self, session_id: str, fmt: str) -> str | bytes:
        """The session in ``fmt`` (see :data:`haytham.reports.export.FORMATS`; the PDFs are bytes), or
        ``session``: the whole session as one file for :meth:`import_session`."""
        self.allow(Action.READ, session_id)
        if fmt == SESSION_FORMAT:
            files = self.store.open(session_id)
            with files.lock():  # a consistent copy: nothing writes meanwhile
                bundle = dump_session(files) | {"decisions": self._carried(session_id)}
                made: str | bytes = json_text(bundle) + "\n"
        else:
            record = audit.decisions(self.store, session_id=session_id)
            shown = [d.sentence for d in record if d.action not in audit.NOT_DECISIONS]
            made = export(self.load_state(session_id), fmt, shown)
        self._record_export(session_id, format=fmt)
        return made

    def record_download(self, session_id: str, fmt: str) -> None:
        """Put a download from the pages on the decision record, as :meth:`export` does for the
        CLI (the pages build their files when they draw; the record is made on the click)."""
        self.allow(Action.READ, session_id)
        self._record_export(session_id, format=fmt, via="browser")

    def _record_export(self, session_id: str, **detail: Any) -> None:
        """An export on the decision record; a read-only store still exports (logged, not lost)."""
        try:
            self._record("export", session_id, **detail)
        except StorageError as exc:
            logging.getLogger(__name__).warning("The export was not recorded: %s", exc)

    def migrate(self) -> str:
        """Team deployment: bring the shared database's tables and the job queue's schema up to
        date (idempotent; app instances and workers also do it as they start)."""
        self.allow(Action.ADMIN)
        url = self.settings.secret("database_url")
        if not url:
            raise InputError(
                "`haytham migrate` sets up the shared database: set HAYTHAM_DATABASE_URL (see "
                "docs/deploy.md). The sessions folder needs no migration."
            )
        try:
            from haytham.runs.queue_schema import install_queue_schema  # procrastinate only here
            from haytham.storage.postgres import PgStore
        except ImportError as exc:
            raise team_packages_missing(exc) from None

        # a database URL opens the PostgreSQL store, which migrated its tables as it opened
        ran = self.store.migrated if isinstance(self.store, PgStore) else 0
        queue = "installed" if install_queue_schema(url) else "already installed"
        return (
            f"{self.store.location}: Haytham's tables are up to date ({ran} migration(s) run "
            f"now); the job queue's schema is {queue}."
        )

    def import_session(self, path: Path) -> str:
        """Create a session from a ``--format session`` export (from either store); returns its
        id. Refused, with nothing written, if the file is not one or the id is taken. The
        caller owns the imported session."""
        self.allow(Action.CREATE)
        bundle = read_bundle(path)
        sid = load_session(self.store, bundle)
        files = self.store.open(sid)
        meta = files.read_json("session.json", default={}) or {}
        if not isinstance(meta.get("owner"), str) or not self.can(Action.ADMIN):
            files.write_json("session.json", {**meta, "owner": self.actor.id})
        carried = bundle.get("decisions")  # the record travels with a session an admin moves
        trusted = isinstance(carried, list) and self.can(Action.ADMIN)  # nobody else's forged
        for line in carried if isinstance(carried, list) and trusted else []:
            with contextlib.suppress(ValueError):
                if audit.Decision.model_validate_json(str(line)).session_id == sid:
                    self.store.append_audit(str(line), sid, json.loads(line)["actor"])
        self._record("import", sid)
        return sid

    def _carried(self, session_id: str) -> list[str]:
        """The session's decision lines that travel in a ``session`` export (not the exports
        and imports of the session itself: those belong to the store they happened in)."""
        lines = self.store.audit_lines(session_id, None)
        return [ln for ln in lines if json.loads(ln).get("action") not in audit.NOT_DECISIONS]

    # -- change requests -------------------------------------------------------------------------
    def propose_change(self, session_id: str, stage: str, request: str) -> Proposal:
        """An agent's proposed revision of ``stage`` for the founder's ``request``, with the
        diff code computed and the invariants it touches or would break. Changes nothing."""
        self.allow(Action.CHANGE, session_id)
        text = " ".join(str(request).split())
        if not text:
            raise InputError("Say what should change: the change request is empty.")
        if len(text) > MAX_REQUEST_CHARS:
            raise InputError(
                f"The change request is {len(text):,} characters; keep it under "
                f"{MAX_REQUEST_CHARS:,} (one change at a time)."
            )
        files = self.store.open(session_id)
        with files.lock():
            state = load_state(files)
            spec = revisable(state, stage)
            check_provider(self.settings)
            caller = ModelCaller(self.settings, self.models, files)
            system = stage_system_prompt(spec) + "\n\n" + load_prompt("change_request.md")
            answer = caller.ask(
                CHANGE_AGENT,
                spec.tier,
                system,
                change_context(spec, state, text),
                proposal_model(spec),
                account_as=CHANGE_AGENT,
            )
            searches = [e for e in files.events() if e.get("type") == "tool_call"]
            proposal = propose(spec, state, text, answer, searches)
            files.append_event(
                "change_proposed",
                spec.slug,
                request=text,
                changes=len(proposal.changes),
                breaks=proposal.breaks,
                broken=proposal.impact.broken,
                touched=proposal.impact.touched,
            )
        return proposal

    def apply_change(
        self, session_id: str, proposal: Proposal, *, continue_run: bool = True
    ) -> Outcome:
        """Replace the stage's output with the proposal (a revision on the record) and re-run
        every later stage through the runner, verifiers and gates (to the next gate)."""
        self.allow(Action.CHANGE, session_id)
        refused = refusal(proposal)
        if refused:
            raise GateError(refused)
        files = self.store.open(session_id)
        with files.lock():
            ensure_state(files)
            state, seq = load_state_seq(files)
            spec = revisable(state, proposal.stage)
            proposal = recomputed(state, proposal)  # code's impact on the session as it is now
            refused = refusal(proposal)
            if refused:
                raise GateError(refused)
            new = revised_state(state, proposal, cleared_state(state, spec.number))
            if self.post_validator is not None:
                findings, divergence = self.post_validator(spec.slug, new, ())
                new = new.model_copy(
                    update={
                        "validations": {**new.validations, spec.slug: findings},
                        "divergence": {**new.divergence, spec.slug: divergence}
                        if divergence
                        else new.divergence,
                    }
                )
            # what the revised stage's validators checked: the current anchor and outputs
            meta = new.stage_meta[spec.slug].model_copy(
                update={
                    "inputs": earlier_inputs(new, spec.slug),
                    "checked": stage_fingerprint(new, spec.slug, now()),
                }
            )
            new = new.model_copy(update={"stage_meta": {**new.stage_meta, spec.slug: meta}})
            with storage_errors(files):
                save_state(files, seq + 1, spec.action, new)
            files.append_event(
                "change_applied",
                spec.slug,
                request=proposal.request,
                changes=proposal.changes,
                impact=proposal.impact.model_dump(mode="json"),
            )
            self._record("change_request", session_id, stage=spec.slug, request=proposal.request)
            Projector(files).project(new, position=spec.action, sequence_id=seq + 1)
            if not continue_run:
                return Outcome(session_id, new.status, next_action=spec.action)
            check_provider(self.settings)
            app = self._app(files)
            return self._advance(files, app, until=None, auto_approve=False)

    # -- history ---------------------------------------------------------------------------------
    def clear_from(self, session_id: str, slug: str) -> Outcome:
        """Discard ``slug`` and everything after it; the next run starts at ``slug``."""
        spec = get_stage(slug)
        self.allow(Action.CHANGE, session_id)
        files = self.store.open(session_id)
        with files.lock():
            ensure_state(files)
            state, seq = load_state_seq(files)
            new = cleared_state(state, spec.number)
            position = position_before(spec.number)
            with storage_errors(files):
                save_state(files, seq + 1, position, new)
            files.append_event("cleared_from", slug)
            self._record("clear_from", session_id, stage=slug)
            Projector(files).project(new, position=position, sequence_id=seq + 1)
        return Outcome(session_id, new.status, next_action=spec.action)

    def fork(self, session_id: str, slug: str, new_id: str | None = None) -> str:
        """A new session holding this one's work before ``slug``; it continues at ``slug``.

        The fork copies the source's latest persisted Burr state (its sequence id is recorded
        in ``session.json`` as the parent pointer) and clears ``slug`` onwards.
        """
        spec = get_stage(slug)
        self.allow(Action.CHANGE, session_id)
        source = self.store.open(session_id)
        with source.lock():
            state, seq = load_state_seq(source)
        idea = source.read_text("idea.md").strip()
        sid = validate_session_id(new_id) if new_id else new_session_id(idea)
        files = self.store.create(sid)
        meta = source.read_json("session.json", default={}) or {}
        files.write_text("idea.md", idea + "\n")
        files.write_json(
            "session.json",
            {
                **meta,
                "session_id": sid,
                "created_at": now(),
                "forked_from": {"session_id": session_id, "sequence_id": seq, "stage": slug},
            },
        )
        new = cleared_state(state.model_copy(update={"session_id": sid}), spec.number)
        position = position_before(spec.number)
        with storage_errors(files):
            save_state(files, 0, position, new)
        files.append_event("forked", None, source=session_id, sequence_id=seq, from_stage=slug)
        Projector(files).project(new, position=position, sequence_id=0)
        self._record("fork", session_id, stage=slug, new_session=sid)
        return sid

    # -- for the UI and CLI (read-only) ----------------------------------------------------------
    def check_session(self, session_id: str) -> None:
        """Raise :class:`SessionNotFound` unless the session exists (a malformed id raises
        :class:`InputError`), or :class:`AccessDenied` unless the caller may open it."""
        self.allow(Action.READ, session_id)

    def updated_at(self, session_id: str) -> str:
        """When the session last changed (its event log, else its folder), ISO 8601 UTC."""
        self.allow(Action.READ, session_id)
        return self.store.open(session_id).updated_at()

    def live_call(self, session_id: str) -> LiveCall | None:
        """The model call this process is streaming for the session, with the output tokens
        received so far (estimated); ``None`` between calls or when another process runs it."""
        self.allow(Action.READ, session_id)
        return self.live.get(session_id)

    @staticmethod
    def graph_dot() -> str:
        """The pipeline graph as Graphviz DOT, drawn by Burr from the stage specs."""
        return graph_dot()

    def blocking(self, state: SessionState | str, gate: int) -> list[Any]:
        """The open blocking items at ``gate`` (each a ``BlockingItem``: ``id``, ``stage``,
        ``message``): what must be resolved or overridden before it can be approved. ``state`` is
        a loaded state, or a session id to load it from."""
        if isinstance(state, str):
            state = self.load_state(state)  # checks the caller
        return open_blocking(state, phase_for_gate(gate))

    def gate_history(self, session_id: str, gate: int) -> GateHistory:
        """Gate ``gate``'s timeline from every step the session persisted: the rounds it opened,
        automatic reworks with the verifier's review, the reviewer's reworks with their feedback,
        overrides, clarifications, anchor edits and decisions, and each rework's before/after
        diff of the key items (see :mod:`haytham.reports.history`). Read-only."""
        phase = phase_for_gate(gate)
        self.allow(Action.READ, session_id)
        return gate_history(load_steps(self.store.open(session_id), phase), gate)


def _auto_event(command: GateCommand) -> dict[str, Any]:
    """An --auto-approve command as the event log has always held it (``kind`` named as such;
    a reviewer's command names it ``command``, see :func:`haytham.runs.progress.milestone_text`)."""
    return {"kind": command.kind, **command.given()}
