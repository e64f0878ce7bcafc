"""What the CLI and the UI call. No pipeline logic lives in either of them.

One :class:`Haytham` per process (it owns the model runtime: the local llama-server, open
cassettes). Every operation on a session takes that session's lock, builds its Burr application
from the session's SQLite state, does its work and releases the lock — so sessions run
concurrently and two processes never work on one session at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from burr.core import Application

from haytham.config import Settings
from haytham.errors import GateError, InputError
from haytham.export import export, json_text
from haytham.history import GateHistory, gate_history, load_steps
from haytham.idea import validate_appetite, validate_idea
from haytham.intake import AGENT as INTAKE_ACTION
from haytham.intake import IntakeRecord, clean_answers
from haytham.models.factory import ModelRuntime
from haytham.models.providers import check_provider
from haytham.pipeline import actions
from haytham.pipeline.gates import apply_command, open_blocking, phase_for_gate
from haytham.pipeline.graph import build_application, gate_name, graph_dot
from haytham.pipeline.projection import Projector
from haytham.pipeline.runner import PostValidator, StageRunner, load_prompt, stage_system_prompt
from haytham.pipeline.state import RunStatus, SessionState
from haytham.progress import LiveCall, LiveCalls
from haytham.render import render_stage
from haytham.revise import (
    AGENT as CHANGE_AGENT,
)
from haytham.revise import (
    Proposal,
    change_context,
    proposal_model,
    propose,
    revisable,
    revised_state,
)
from haytham.session_state import (
    cleared_state,
    ensure_state,
    load_state,
    load_state_seq,
    position_before,
    save_state,
    storage_errors,
)
from haytham.stages import Phase, get_stage
from haytham.status import session_status
from haytham.storage import (
    Session,
    new_session_id,
    now,
    open_store,
    team_packages_missing,
    validate_session_id,
)
from haytham.transfer import SESSION_FORMAT, dump_session, load_session, read_bundle

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
    def __init__(
        self,
        settings: Settings,
        *,
        verifier_factory: VerifierFactory | None,
        post_validator: PostValidator | None,
        models: ModelRuntime | None = None,
        tracking: bool = True,
    ) -> None:
        """Built by :func:`haytham.app.make_service`, which wires the verifiers and validators
        every session runs with; both are required here so that a service without them is
        never built by accident."""
        self.settings = settings
        self.store = open_store(settings)
        self._own_models = models is None
        self.models = models or ModelRuntime(settings)
        self.verifier_factory = verifier_factory
        self.post_validator = post_validator
        self.tracking = tracking
        self.live = LiveCalls()  # calls streaming now, per session (for the UI's Run page)

    def close(self) -> None:
        self.store.close()
        if self._own_models:
            self.models.close()

    def __enter__(self) -> Haytham:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        text = validate_idea(idea)
        chosen = validate_appetite(appetite)
        sid = validate_session_id(session_id) if session_id else new_session_id(text)
        files = self.store.create(sid)
        try:
            files.write_text("idea.md", text + "\n")
            files.write_json(
                "session.json",
                {"session_id": sid, "created_at": now(), "appetite": chosen, "schema_version": 1}
                | ({"skip_intake": True} if skip_intake else {}),
            )
            files.append_event(
                "session_created", None, appetite=chosen, provider=self.settings.provider
            )
        except BaseException:  # nothing half-created: a session exists whole or not at all
            self.store.delete(sid)
            raise
        return sid

    def list_sessions(self) -> list[str]:
        return self.store.list_ids()

    def delete_session(self, session_id: str) -> None:
        self.store.delete(session_id)

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
        return load_state(self.store.open(session_id))

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, session_id: str, *, until: int | None = None, auto_approve: bool = False
    ) -> Outcome:
        """Run until a gate needs a person (or ``until``), the end, or an error."""
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
                for command in self._auto_commands(state, gate):
                    with storage_errors(files):
                        app.step(inputs={"command": command})
                    files.append_event("gate_command", None, gate=gate, **command)
                messages.append(f"gate {gate} auto-approved")
                continue
            with storage_errors(files):
                app.run(halt_before=list(gates), halt_after=["end", INTAKE_ACTION])

    @staticmethod
    def _auto_commands(state: SessionState, gate: int) -> list[dict[str, Any]]:
        phase = phase_for_gate(gate)
        commands: list[dict[str, Any]] = []
        if phase is Phase.WHY and state.anchor is not None:
            pending = state.anchor.open_ambiguities()
            if pending:
                commands.append(
                    {
                        "kind": "clarify_all",
                        "auto": True,
                        "choices": {i.property: "1" for i in pending},
                    }
                )
        if open_blocking(state, phase):
            commands.append({"kind": "override", "reason": "auto-approve", "auto": True})
        commands.append({"kind": "approve", "note": "auto-approve"})
        return commands

    def answer_intake(
        self, session_id: str, answers: list[str], *, continue_run: bool = True
    ) -> Outcome:
        """The founder's answers to the intake questions (one per question, in order; ``""``
        or a missing one skips it; none at all skips them all): they become the "Founder's
        clarifications" section of the idea, and the run goes on to stage 1 (no second
        classification)."""
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
        self, session_id: str, gate: int, command: dict[str, Any], *, continue_run: bool = True
    ) -> Outcome:
        """Apply a reviewer's command at ``gate``; on approve/rework, run on to the next gate."""
        phase = phase_for_gate(gate)
        files = self.store.open(session_id)
        with files.lock():
            app = self._app(files)
            nxt = app.get_next_action()
            here = nxt.name if nxt else "the end"
            if here != gate_name(phase):
                raise GateError(
                    f"Session {session_id} is not waiting at Gate {gate} (next step: {here})."
                )
            apply_command(SessionState.of(app.state), phase, command)  # raises; changes nothing
            with storage_errors(files):
                app.step(inputs={"command": command})
            files.append_event("gate_command", None, gate=gate, **_public(command))
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

    def approve(self, sid: str, gate: int, note: str = "", **kw: Any) -> Outcome:
        return self.decide(sid, gate, {"kind": "approve", "note": note}, **kw)

    def reject(self, sid: str, gate: int, note: str = "", **kw: Any) -> Outcome:
        return self.decide(sid, gate, {"kind": "reject", "note": note}, **kw)

    def rework(self, sid: str, stage: str, feedback: str, **kw: Any) -> Outcome:
        gate = get_stage(stage).phase.gate
        return self.decide(
            sid, gate, {"kind": "rework", "stage": stage, "feedback": feedback}, **kw
        )

    def override(self, sid: str, gate: int, reason: str, target: str | None = None) -> Outcome:
        return self.decide(sid, gate, {"kind": "override", "reason": reason, "target": target})

    def clarify(self, sid: str, invariant: str, choice: str) -> Outcome:
        return self.decide(sid, 1, {"kind": "clarify", "invariant": invariant, "choice": choice})

    # -- reading ---------------------------------------------------------------------------------
    def status(self, session_id: str) -> dict[str, Any]:
        files = self.store.open(session_id)
        return session_status(files, load_state(files))

    def show(self, session_id: str, stage: str) -> str:
        state = self.load_state(session_id)
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
        """The session in ``fmt`` (see :data:`haytham.export.FORMATS`; the PDFs are bytes), or
        ``session``: the whole session as one file for :meth:`import_session`."""
        if fmt == SESSION_FORMAT:
            files = self.store.open(session_id)
            with files.lock():  # a consistent copy: nothing writes meanwhile
                return json_text(dump_session(files)) + "\n"
        return export(self.load_state(session_id), fmt)

    def migrate(self) -> str:
        """Team deployment: bring the shared database's tables and the job queue's schema up to
        date (idempotent; app instances and workers also do it as they start)."""
        url = self.settings.secret("database_url")
        if not url:
            raise InputError(
                "`haytham migrate` sets up the shared database: set HAYTHAM_DATABASE_URL (see "
                "docs/deploy.md). The sessions folder needs no migration."
            )
        try:
            from haytham.queue import migrate_queue, queue_app  # procrastinate only here
        except ImportError as exc:
            raise team_packages_missing(exc) from None

        ran = self.store.migrated
        queue = "installed" if migrate_queue(queue_app(url)) else "already installed"
        return (
            f"{self.store.location}: Haytham's tables are up to date ({ran} migration(s) run "
            f"now); the job queue's schema is {queue}."
        )

    def import_session(self, path: Path) -> str:
        """Create a session from a ``--format session`` export (from either store); returns its
        id. Refused, with nothing written, if the file is not one or the id is taken."""
        return load_session(self.store, read_bundle(path))

    # -- change requests -------------------------------------------------------------------------
    def propose_change(self, session_id: str, stage: str, request: str) -> Proposal:
        """An agent's proposed revision of ``stage`` for the founder's ``request``, with the
        diff code computed and the invariants it touches or would break. Changes nothing."""
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
            runner = StageRunner(self.settings, self.models, files, input_validation=False)
            system = stage_system_prompt(spec) + "\n\n" + load_prompt("change_request.md")
            answer = runner.ask(
                CHANGE_AGENT,
                spec.tier,
                system,
                change_context(spec, state, text),
                proposal_model(spec),
                account_as=CHANGE_AGENT,
            )
            proposal = propose(spec, state, text, answer)
            files.append_event(
                "change_proposed",
                spec.slug,
                request=text,
                changes=len(proposal.changes),
                breaks=proposal.breaks,
            )
        return proposal

    def apply_change(
        self, session_id: str, proposal: Proposal, *, continue_run: bool = True
    ) -> Outcome:
        """Replace the stage's output with the proposal (a revision on the record) and re-run
        every later stage through the runner, verifiers and gates (to the next gate)."""
        if proposal.breaks:
            raise GateError(
                f"This change would break {', '.join(proposal.breaks)}; nothing was applied. "
                "Change the concept anchor first (clear-from the first stage after it and "
                "edit it at Gate 1), or ask for a change that keeps it."
            )
        files = self.store.open(session_id)
        with files.lock():
            ensure_state(files)
            state, seq = load_state_seq(files)
            spec = revisable(state, proposal.stage)
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
            with storage_errors(files):
                save_state(files, seq + 1, spec.action, new)
            files.append_event(
                "change_applied", spec.slug, request=proposal.request, changes=proposal.changes
            )
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
        files = self.store.open(session_id)
        with files.lock():
            ensure_state(files)
            state, seq = load_state_seq(files)
            new = cleared_state(state, spec.number)
            position = position_before(spec.number)
            with storage_errors(files):
                save_state(files, seq + 1, position, new)
            files.append_event("cleared_from", slug)
            Projector(files).project(new, position=position, sequence_id=seq + 1)
        return Outcome(session_id, new.status, next_action=spec.action)

    def fork(self, session_id: str, slug: str, new_id: str | None = None) -> str:
        """A new session holding this one's work before ``slug``; it continues at ``slug``.

        The fork copies the source's latest persisted Burr state (its sequence id is recorded
        in ``session.json`` as the parent pointer) and clears ``slug`` onwards.
        """
        spec = get_stage(slug)
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
        return sid

    # -- for the UI and CLI (read-only) ----------------------------------------------------------
    def check_session(self, session_id: str) -> None:
        """Raise :class:`SessionNotFound` unless the session exists (a malformed id raises
        :class:`InputError`); reads nothing else."""
        self.store.open(session_id)

    def updated_at(self, session_id: str) -> str:
        """When the session last changed (its event log, else its folder), ISO 8601 UTC."""
        return self.store.open(session_id).updated_at()

    def live_call(self, session_id: str) -> LiveCall | None:
        """The model call this process is streaming for the session, with the output tokens
        received so far (estimated); ``None`` between calls or when another process runs it."""
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
            state = self.load_state(state)
        return open_blocking(state, phase_for_gate(gate))

    def gate_history(self, session_id: str, gate: int) -> GateHistory:
        """Gate ``gate``'s timeline from every step the session persisted: the rounds it opened,
        automatic reworks with the verifier's review, the reviewer's reworks with their feedback,
        overrides, clarifications, anchor edits and decisions, and each rework's before/after
        diff of the key items (see :mod:`haytham.history`). Read-only."""
        phase = phase_for_gate(gate)
        return gate_history(load_steps(self.store.open(session_id), phase), gate)


def _public(command: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in command.items() if k != "kind"} | {"command": command.get("kind")}
