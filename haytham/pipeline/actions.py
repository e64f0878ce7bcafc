"""Burr actions: small typed functions over :class:`SessionState`; model calls live in the bound
:class:`StageRunner`.

Each is a pydantic action: Burr gives it a model with only the fields it declares in ``reads``
(plus its ``writes``), so the declarations are exact, and merges back only ``writes``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burr.core import action

from haytham.idea.intake import clarifications, classify, clean_answers, with_clarifications
from haytham.pipeline.commands import GateCommand
from haytham.pipeline.gates import apply_command
from haytham.pipeline.runner import StageRunner
from haytham.pipeline.staleness import checked_now, earlier_inputs, stage_fingerprint, stamped
from haytham.schemas.intake import AGENT as INTAKE_ACTION
from haytham.schemas.intake import IntakeRecord
from haytham.schemas.verification import PhaseVerification
from haytham.stages import STAGES, Phase, StageSpec
from haytham.state import LoggedReview, RunStatus, SessionState, StageMeta, gate_action, gate_of
from haytham.storage.protocol import now
from haytham.verify.config import DEFAULT_MAX_REWORK_ROUNDS
from haytham.verify.rework import ReworkDecision, decide

Verifier = Callable[[Phase, SessionState], PhaseVerification]
"""A phase verifier. It may also have ``max_rework_rounds: int`` and
``record_rework(phase, decision)`` (see :class:`haytham.verify.factory.PhaseVerifier`)."""


WORK = ["idea", "appetite", "anchor", "anchor_text", "outputs", "stage_meta", "validations"]
"""What a stage's context, checks and its phase's verifier read of the session."""


@action.pydantic(reads=[], writes=["status", "route"])
def start(state: SessionState) -> SessionState:
    """The run begins (or resumes): running, no route chosen yet."""
    return state.model_copy(update={"status": RunStatus.RUNNING, "route": None})


@action.pydantic(reads=["idea", "intake"], writes=["idea", "intake", "route", "status"])
def intake(
    state: SessionState, runner: StageRunner | None, answers: list[str] | None = None
) -> SessionState:
    """Classify the founder's text once (see :mod:`haytham.idea.intake`); wait for answers to the
    questions (``answers`` input: one per question, ``""`` skips one) or end an unrelated text.
    A decided or skipped intake passes straight on to stage 1."""
    record = state.intake
    idea = state.idea
    if record is None:
        if runner is None or not runner.settings.intake:
            record = IntakeRecord(status="skipped")
        else:
            answer = classify(runner.caller, idea)
            waits = {"idea": "idea", "needs_clarification": "waiting", "unrelated": "unrelated"}
            record = IntakeRecord(status=waits[answer.classification], answer=answer)
    elif record.status == "waiting" and answers is not None and record.answer is not None:
        questions = record.answer.questions
        given = clean_answers(answers, questions)
        idea = with_clarifications(idea, clarifications(questions, given))
        record = IntakeRecord(status="answered", answer=record.answer, answers=given)
    if record.proceeds:
        route, status = STAGES[0].action, RunStatus.RUNNING
    elif record.status == "unrelated":
        route, status = "end", RunStatus.UNRELATED
    else:  # waiting for the founder's answers
        route, status = INTAKE_ACTION, RunStatus.INTAKE
    return state.model_copy(
        update={"idea": idea, "intake": record, "route": route, "status": status}
    )


@action.pydantic(
    reads=[*WORK, "divergence", "reviews", "review_log"],
    writes=[
        "outputs",
        "stage_meta",
        "validations",
        "divergence",
        "reviews",
        "review_log",
        "route",
        "status",
    ],
)
def run_stage(state: SessionState, spec: StageSpec, runner: StageRunner) -> SessionState:
    # receiving-stage validation (seed 000) is the stage action's first step: the items this
    """Run stage ``spec`` after validating what it receives; store its output, check results,
    validator findings and divergence, and consume the review it was asked to address."""
    # stage consumes are checked, and their producers revised, before the stage's own call
    received = runner.receiver.receive(spec, state) if runner.receiver else None
    result = runner.run_stage(spec, state, received)
    outputs = {**state.outputs, **result.inputs, spec.slug: result.output}
    after = state.model_copy(update={"outputs": outputs})
    at = now()
    meta = StageMeta(
        status="needs_attention" if result.problems else "completed",
        attempts=result.attempts,
        problems=result.problems,
        at=at,
        quality_flags=result.quality_flags,
        anchor=state.anchor.digest() if state.anchor else None,
        inputs=earlier_inputs(after, spec.slug),
        checked=stage_fingerprint(after, spec.slug, at),
    )
    metas = {**state.stage_meta, spec.slug: meta}
    validations = {**state.validations, spec.slug: result.findings}
    for slug in result.inputs:  # producers' outputs this stage's input validation revised
        validations[slug], _ = runner.revalidate(slug, after)
        if slug in metas:
            metas[slug] = checked_now(metas[slug], after, slug, at)
    reviews = dict(state.reviews)
    consumed = reviews.pop(spec.slug, None)
    log = state.review_log
    if consumed is not None:
        log = [*log, LoggedReview(**consumed.model_dump(), stage=spec.slug)]
    divergence = state.divergence
    if result.divergence:
        divergence = {**divergence, spec.slug: result.divergence}
    return state.model_copy(
        update={
            "outputs": outputs,
            "stage_meta": metas,
            "validations": validations,
            "divergence": divergence,
            "reviews": reviews,
            "review_log": log,
            "route": None,
            "status": RunStatus.RUNNING,
        }
    )


@action.pydantic(reads=["idea", "outputs"], writes=["anchor", "anchor_text"])
def extract_anchor(state: SessionState, runner: StageRunner) -> SessionState:
    """Distil the concept anchor from the idea and its analysis; store it and its rendering."""
    anchor = runner.extract_anchor(state)
    return state.model_copy(update={"anchor": anchor, "anchor_text": anchor.render()})


@action.pydantic(
    reads=[*WORK, "gates", "reviews", "rework"],
    writes=["verifications", "gates", "route", "status", "reviews", "rework"],
)
def verify_phase(state: SessionState, phase: Phase, verifier: Verifier | None) -> SessionState:
    """Verify the phase, then send a stage back automatically or open the gate."""
    tracker = dict(state.rework)
    decision: ReworkDecision | None = None
    if verifier is None:
        verification = PhaseVerification(
            phase=phase.value,
            passed=True,
            status="off",
            strategy="off",
            reason="verification is off",
        )
    else:
        rounds = int(getattr(verifier, "max_rework_rounds", DEFAULT_MAX_REWORK_ROUNDS))
        decision = decide(phase, verifier(phase, state), state, max_rounds=rounds)
        record_rework = getattr(verifier, "record_rework", None)
        if callable(record_rework):
            record_rework(phase, decision)
        verification = decision.verification
    verification = stamped(verification, state, phase, now())
    verifications = {**state.verifications, phase.value: verification}
    if decision is not None and decision.route is not None:  # automatic rework
        return state.model_copy(
            update={
                "verifications": verifications,
                "reviews": {**state.reviews, **decision.reviews},
                "rework": {**tracker, phase.value: decision.tracker},
                "route": decision.route,
                "status": RunStatus.RUNNING,
            }
        )
    tracker.pop(phase.value, None)
    record = gate_of(state.gates, phase)
    update: dict[str, Any] = {
        "status": "open",
        "round": record.round + 1,
        "opened_at": now(),
        "decided_at": None,
    }
    if decision is not None and decision.tracker.round:
        update |= {
            "rework_stage": decision.tracker.last_stage,
            "feedback": f"[automatic rework by the verifier] {decision.note}",
        }
    return state.model_copy(
        update={
            "verifications": verifications,
            "rework": tracker,
            "gates": {**state.gates, phase.gate: record.model_copy(update=update)},
            "route": None,
            "status": RunStatus.waiting(phase.gate),
        }
    )


@action.pydantic(
    reads=[
        "anchor",
        "anchor_text",
        "outputs",
        "stage_meta",
        "validations",
        "verifications",
        "gates",
        "reviews",
        "status",
    ],
    writes=["gates", "anchor", "anchor_text", "route", "status", "reviews"],
)
def gate(state: SessionState, phase: Phase, command: GateCommand) -> SessionState:
    """Apply the reviewer's ``command`` (typed by the service, see
    :func:`haytham.pipeline.commands.parse_command`) at ``phase``'s gate and route on."""
    decision = apply_command(state, phase, command)
    anchor = decision.anchor if decision.anchor is not None else state.anchor
    return state.model_copy(
        update={
            "gates": {**state.gates, phase.gate: decision.record},
            "anchor": anchor,
            "anchor_text": anchor.render() if anchor else state.anchor_text,
            "route": decision.route or gate_action(phase.gate),
            "status": decision.status or state.status,
            "reviews": decision.reviews if decision.reviews is not None else state.reviews,
        }
    )


@action.pydantic(reads=["status"], writes=["status"])
def end(state: SessionState) -> SessionState:
    """The run ends: done, unless it was rejected at a gate or intake found no idea."""
    kept = (RunStatus.REJECTED, RunStatus.UNRELATED)
    done = state.status if state.status in kept else RunStatus.DONE
    return state.model_copy(update={"status": done})
