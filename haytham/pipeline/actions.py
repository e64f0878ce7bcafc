"""Burr actions: small functions over state; model calls live in the bound :class:`StageRunner`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from burr.core import State, action

from haytham.pipeline.gates import apply_command, gate_record
from haytham.pipeline.runner import StageRunner
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase, StageSpec
from haytham.store import now
from haytham.verify.config import DEFAULT_MAX_REWORK_ROUNDS
from haytham.verify.rework import ReworkDecision, decide

Verifier = Callable[[Phase, Mapping[str, Any]], PhaseVerification]
"""A phase verifier. It may also have ``max_rework_rounds: int`` and
``record_rework(phase, decision)`` (see :class:`haytham.verify.factory.PhaseVerifier`)."""

INITIAL_STATE: dict[str, Any] = {
    "status": "running",
    "route": None,
    "appetite": None,
    "anchor": None,
    "anchor_text": "",
    "outputs": {},
    "stage_meta": {},
    "validations": {},
    "constraints": {},
    "gates": {},
    "verifications": {},
    "reviews": {},
    "review_log": [],
    "divergence": {},
    "rework": {},
}
STAGE_WRITES = [
    "outputs",
    "stage_meta",
    "validations",
    "constraints",
    "reviews",
    "review_log",
    "divergence",
    "route",
    "status",
]


def constraints_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """Trait constraints (stage 7) merged with the anchor's access/interaction invariants."""
    traits = ((state.get("outputs") or {}).get("system-traits") or {}).get("payload") or {}
    merged = dict(traits.get("constraints") or {})
    anchor = state.get("anchor")
    if anchor:
        for inv in ConceptAnchor.model_validate(anchor).invariants:
            if inv.property in ("access_model", "interaction_model", "session_medium"):
                merged[inv.property] = inv.value
    return merged


@action(reads=[], writes=["status", "route"])
def start(state: State) -> State:
    return state.update(status="running", route=None)


@action(
    reads=["idea", "anchor", "anchor_text", "outputs", "appetite", "reviews"], writes=STAGE_WRITES
)
def run_stage(state: State, spec: StageSpec, runner: StageRunner) -> State:
    current = state.get_all()
    result = runner.run_stage(spec, current)
    outputs = {**current["outputs"], **result.inputs, spec.slug: result.output}
    meta = {
        **current["stage_meta"],
        spec.slug: {
            "status": "needs_attention" if result.problems else "completed",
            "attempts": result.attempts,
            "problems": result.problems,
            "at": now(),
            **({"quality_flags": result.quality_flags} if result.quality_flags is not None else {}),
            **(
                {"anchor": ConceptAnchor.model_validate(current["anchor"]).digest()}
                if current.get("anchor")
                else {}
            ),
        },
    }
    reviews = dict(current["reviews"])
    consumed = reviews.pop(spec.slug, None)
    log = (
        [*current["review_log"], {**consumed, "stage": spec.slug}]
        if consumed
        else current["review_log"]
    )
    updated = {**current, "outputs": outputs}
    return state.update(
        outputs=outputs,
        stage_meta=meta,
        validations={**current["validations"], spec.slug: result.findings},
        divergence={**current["divergence"], spec.slug: result.divergence}
        if result.divergence
        else current["divergence"],
        constraints=constraints_of(updated),
        reviews=reviews,
        review_log=log,
        route=None,
        status="running",
    )


@action(reads=["idea", "outputs"], writes=["anchor", "anchor_text", "constraints"])
def extract_anchor(state: State, runner: StageRunner) -> State:
    anchor = runner.extract_anchor(state.get_all())
    dumped = anchor.model_dump(mode="json")
    return state.update(
        anchor=dumped,
        anchor_text=anchor.render(),
        constraints=constraints_of({**state.get_all(), "anchor": dumped}),
    )


@action(
    reads=["anchor", "outputs", "gates", "rework", "reviews", "stage_meta", "validations"],
    writes=["verifications", "gates", "route", "status", "reviews", "rework"],
)
def verify_phase(state: State, phase: Phase, verifier: Verifier | None) -> State:
    """Verify the phase, then send a stage back automatically or open the gate."""
    current = state.get_all()
    tracker = dict(current.get("rework") or {})
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
        decision = decide(phase, verifier(phase, current), current, max_rounds=rounds)
        record_rework = getattr(verifier, "record_rework", None)
        if callable(record_rework):
            record_rework(phase, decision)
        verification = decision.verification
    verifications = {**current["verifications"], phase.value: verification.model_dump(mode="json")}
    if decision is not None and decision.route is not None:  # automatic rework
        return state.update(
            verifications=verifications,
            gates=current["gates"],
            reviews={**current["reviews"], **decision.reviews},
            rework={**tracker, phase.value: decision.tracker},
            route=decision.route,
            status="running",
        )
    tracker.pop(phase.value, None)
    record = gate_record(current, phase)
    update: dict[str, Any] = {
        "status": "open",
        "round": record.round + 1,
        "opened_at": now(),
        "decided_at": None,
    }
    if decision is not None and decision.tracker.get("round"):
        update |= {
            "rework_stage": decision.tracker.get("last_stage"),
            "feedback": f"[automatic rework by the verifier] {decision.note}",
        }
    opened = record.model_copy(update=update)
    return state.update(
        verifications=verifications,
        reviews=current["reviews"],
        rework=tracker,
        gates={**current["gates"], str(phase.gate): opened.model_dump(mode="json")},
        route=None,
        status=f"waiting_gate_{phase.gate}",
    )


@action(
    reads=["gates", "anchor", "outputs", "verifications", "validations", "stage_meta"],
    writes=["gates", "anchor", "anchor_text", "route", "status", "reviews", "constraints"],
)
def gate(state: State, phase: Phase, command: dict) -> State:
    current = state.get_all()
    updates = apply_command(current, phase, command)
    record = updates.pop("gate_record")
    updates.pop("overridden", None)
    merged = {**current, **updates}
    return state.update(
        gates={**current["gates"], str(phase.gate): record.model_dump(mode="json")},
        anchor=merged["anchor"],
        anchor_text=merged["anchor_text"],
        route=updates.get("route", f"gate_{phase.gate}"),
        status=merged["status"],
        reviews=merged["reviews"],
        constraints=constraints_of(merged),
    )


@action(reads=["status"], writes=["status"])
def end(state: State) -> State:
    return state.update(status="rejected" if state["status"] == "rejected" else "done")
