"""Decision-gate logic as pure functions over the pipeline state.

A gate command (approve, reject, rework, override, clarify, edit, remove_non_goal) either
returns the state updates it implies or raises :class:`GateError` / :class:`InputError` with the
reason — in which case nothing changes. Approval is refused while anything blocking is open:
ambiguous invariants (Gate 1), a NO-GO verdict (Gate 1), blocking verifier violations, blocking
validator findings and failed mechanical checks, unless each was overridden with a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from haytham.errors import GateError, InputError
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.gate import AnchorEdit, Clarification, GateRecord, Override
from haytham.schemas.verification import ReviewArtifact, ReviewIssue
from haytham.stages import STAGES, Phase, get_stage, phase_stages
from haytham.store import now

NEXT_ACTION = {
    Phase.WHY: "mvp_scope",
    Phase.WHAT: "system_traits",
    Phase.HOW: "story_generation",
    Phase.STORIES: "end",
}
COMMANDS = (
    "approve",
    "reject",
    "rework",
    "override",
    "clarify",
    "clarify_all",
    "edit",
    "remove_non_goal",
)


@dataclass(frozen=True)
class BlockingItem:
    id: str
    stage: str | None
    message: str


def phase_for_gate(gate: int) -> Phase:
    if not isinstance(gate, int) or not 1 <= gate <= 4:
        raise InputError(f"Gate must be 1, 2, 3 or 4, not {gate!r}.")
    return list(Phase)[gate - 1]


def gate_record(state: Mapping[str, Any], phase: Phase) -> GateRecord:
    raw = (state.get("gates") or {}).get(str(phase.gate))
    return GateRecord.model_validate(raw) if raw else GateRecord(gate=phase.gate, phase=phase.value)


def blocking_items(state: Mapping[str, Any], phase: Phase) -> list[BlockingItem]:
    """Everything that must be resolved or overridden before this gate can be approved."""
    items: list[BlockingItem] = []
    outputs = state.get("outputs") or {}
    if phase is Phase.WHY:
        summary = (outputs.get("validation-summary") or {}).get("payload") or {}
        if summary.get("verdict") == "NO-GO":
            items.append(
                BlockingItem(
                    "verdict:NO-GO",
                    "validation-summary",
                    f"Verdict NO-GO ({summary.get('verdict_reason', '')})",
                )
            )
    verification = (state.get("verifications") or {}).get(phase.value) or {}
    for v in verification.get("invariants_violated", []):
        if v.get("severity") == "blocking":
            items.append(
                BlockingItem(
                    f"violation:{v.get('invariant')}:{v.get('stage')}",
                    v.get("stage"),
                    f"{v.get('invariant')}: {v.get('violation')}",
                )
            )
    if verification.get("status") == "inconclusive":
        items.append(
            BlockingItem(
                "verification:inconclusive",
                None,
                f"Verification inconclusive: {verification.get('reason', '')}",
            )
        )
    slugs = [s.slug for s in phase_stages(phase)]
    for slug in slugs:
        meta = (state.get("stage_meta") or {}).get(slug) or {}
        for n, problem in enumerate(meta.get("problems", []), 1):
            items.append(BlockingItem(f"check:{slug}:{n}", slug, problem))
        for n, f in enumerate((state.get("validations") or {}).get(slug, []), 1):
            if f.get("severity") == "blocking":
                items.append(
                    BlockingItem(
                        f"finding:{f.get('validator')}:{slug}:{n}", slug, f.get("message", "")
                    )
                )
    return items


def stale_stages(state: Mapping[str, Any]) -> list[str]:
    """Stages (in order) that ran with an anchor whose values have since changed.

    Their outputs, validator findings and their phase's verification were made against the old
    anchor; ``clear-from`` the first of them re-runs them against the current one. A stage that
    recorded no anchor digest (stage 1, or a session from before digests) is never stale.
    """
    anchor = state.get("anchor")
    if not anchor:
        return []
    current = ConceptAnchor.model_validate(anchor).digest()
    meta = state.get("stage_meta") or {}
    return [s.slug for s in STAGES if (meta.get(s.slug) or {}).get("anchor") not in (None, current)]


def open_blocking(state: Mapping[str, Any], phase: Phase) -> list[BlockingItem]:
    record = gate_record(state, phase)
    done = {o.target for o in record.overrides if o.round == record.round}
    return [i for i in blocking_items(state, phase) if i.id not in done]


def apply_command(state: Mapping[str, Any], phase: Phase, command: Mapping[str, Any]) -> dict:
    """State updates for ``command`` at ``phase``'s gate (raises and changes nothing on error)."""
    kind = command.get("kind")
    if kind not in COMMANDS:
        raise InputError(f"Unknown gate command {kind!r}; use one of {', '.join(COMMANDS)}.")
    record = gate_record(state, phase)
    if record.status != "open":
        raise GateError(
            f"Gate {phase.gate} is not open (it is {record.status}); "
            "check `haytham status` for where the session is."
        )
    handler = _HANDLERS[kind]
    return handler(state, phase, record, command)


def _anchor(state: Mapping[str, Any], phase: Phase) -> ConceptAnchor:
    if phase is not Phase.WHY:
        raise GateError("The concept anchor can only be clarified or edited at Gate 1.")
    raw = state.get("anchor")
    if not raw:
        raise GateError("This session has no concept anchor yet.")
    return ConceptAnchor.model_validate(raw)


def _with_anchor(record: GateRecord, anchor: ConceptAnchor, **extra: Any) -> dict:
    return {
        "anchor": anchor.model_dump(mode="json"),
        "anchor_text": anchor.render(),
        "gate_record": record,
        **extra,
    }


def _approve(state, phase, record, command) -> dict:
    if phase is Phase.WHY and state.get("anchor"):
        pending = ConceptAnchor.model_validate(state["anchor"]).open_ambiguities()
        if pending:
            names = ", ".join(i.property for i in pending)
            raise GateError(
                f"Gate 1 cannot be approved: {len(pending)} invariant(s) need "
                f"clarification first ({names}); use `haytham clarify`."
            )
    blocking = open_blocking(state, phase)
    if blocking:
        listed = "; ".join(f"[{b.id}] {b.message}" for b in blocking[:5])
        raise GateError(
            f"Gate {phase.gate} cannot be approved while {len(blocking)} blocking "
            f"item(s) are open: {listed}. Override them with a reason, or request "
            "rework."
        )
    rec = record.model_copy(
        update={"status": "approved", "note": command.get("note", ""), "decided_at": now()}
    )
    nxt = NEXT_ACTION[phase]
    return {"gate_record": rec, "route": nxt, "status": "done" if nxt == "end" else "running"}


def _reject(state, phase, record, command) -> dict:
    rec = record.model_copy(
        update={"status": "rejected", "note": command.get("note", ""), "decided_at": now()}
    )
    return {"gate_record": rec, "route": "end", "status": "rejected"}


def _rework(state, phase, record, command) -> dict:
    spec = get_stage(str(command.get("stage", "")))
    if spec.phase is not phase:
        allowed = ", ".join(s.slug for s in phase_stages(phase))
        raise GateError(
            f"Gate {phase.gate} can send back only its own stages ({allowed}); "
            f"use `haytham clear-from` to redo {spec.slug}."
        )
    feedback = str(command.get("feedback", "")).strip()
    if not feedback:
        raise InputError("Rework needs feedback: say what the stage must change.")
    review = ReviewArtifact(
        verdict="rework",
        source="reviewer",
        round=record.round,
        issues=[ReviewIssue(severity="blocking", stage=spec.slug, detail=feedback)],
    )
    reviews = dict(state.get("reviews") or {})
    reviews[spec.slug] = review.model_dump(mode="json")
    rec = record.model_copy(
        update={
            "status": "rework_requested",
            "rework_stage": spec.slug,
            "feedback": feedback,
            "decided_at": now(),
        }
    )
    return {"gate_record": rec, "route": spec.action, "reviews": reviews, "status": "running"}


def _override(state, phase, record, command) -> dict:
    reason = str(command.get("reason", "")).strip()
    if not reason:
        raise InputError("An override needs a reason; say why the finding does not apply.")
    open_items = open_blocking(state, phase)
    target = command.get("target")
    if target:
        chosen = [i for i in open_items if i.id == target]
        if not chosen:
            ids = ", ".join(i.id for i in open_items) or "none"
            raise GateError(
                f"Nothing open to override as {target!r} at Gate {phase.gate} (open: {ids})."
            )
    else:
        chosen = open_items
        if not chosen:
            raise GateError(f"Gate {phase.gate} has nothing blocking to override.")
    auto = bool(command.get("auto", False))
    added = [
        Override(target=i.id, reason=reason, auto=auto, round=record.round, at=now())
        for i in chosen
    ]
    rec = record.model_copy(update={"overrides": [*record.overrides, *added]})
    return {"gate_record": rec, "overridden": [i.id for i in chosen]}


def _clarify(state, phase, record, command) -> dict:
    return _clarify_all(
        state,
        phase,
        record,
        {
            "choices": {command.get("invariant", ""): command.get("choice", "")},
            "auto": command.get("auto", False),
        },
    )


def _clarify_all(state, phase, record, command) -> dict:
    anchor = _anchor(state, phase)
    choices: Mapping[str, str] = command.get("choices") or {}
    if not choices:
        raise InputError("No clarification choices were given.")
    auto = bool(command.get("auto", False))
    added = []
    for prop, choice in choices.items():
        anchor = anchor.resolve(prop, str(choice), by_user=not auto)
        added.append(
            Clarification(
                invariant=anchor.invariant(prop).property,
                choice=anchor.invariant(prop).value,
                auto=auto,
                at=now(),
            )
        )
    rec = record.model_copy(update={"clarifications": [*record.clarifications, *added]})
    return _with_anchor(rec, anchor)


def _edit(state, phase, record, command) -> dict:
    anchor = _anchor(state, phase)
    prop = str(command.get("invariant", ""))
    before = anchor.invariant(prop).value
    anchor = anchor.edit_value(prop, str(command.get("value", "")))
    edit = AnchorEdit(
        kind="edit_value",
        target=anchor.invariant(prop).property,
        before=before,
        after=anchor.invariant(prop).value,
        at=now(),
    )
    return _with_anchor(record.model_copy(update={"edits": [*record.edits, edit]}), anchor)


def _remove_non_goal(state, phase, record, command) -> dict:
    anchor = _anchor(state, phase)
    text = str(command.get("text", ""))
    anchor = anchor.remove_non_goal(text)
    edit = AnchorEdit(kind="remove_non_goal", target="non_goals", before=text, at=now())
    return _with_anchor(record.model_copy(update={"edits": [*record.edits, edit]}), anchor)


_HANDLERS = {
    "approve": _approve,
    "reject": _reject,
    "rework": _rework,
    "override": _override,
    "clarify": _clarify,
    "clarify_all": _clarify_all,
    "edit": _edit,
    "remove_non_goal": _remove_non_goal,
}
