"""Decision-gate logic as pure functions over the pipeline state.

A gate command (one of :data:`haytham.pipeline.commands.GateCommand`: approve, reject, rework,
override, clarify, clarify_all, edit, remove_non_goal, already typed by the service) either
returns the :class:`GateDecision` it implies or raises :class:`GateError` / :class:`InputError`
with the reason — in which case nothing changes. Approval is refused while anything blocking is open:
ambiguous invariants (Gate 1), a NO-GO verdict (Gate 1), blocking verifier violations, blocking
validator findings and failed mechanical checks, unless each was overridden with a reason; and
while the gate's own checks are stale (:mod:`haytham.pipeline.staleness`), unless the approval
carries an explicit ``override_stale`` reason (logged as an override of ``stale-checks``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from haytham.errors import GateError, InputError
from haytham.pipeline.commands import (
    Approve,
    Clarify,
    ClarifyAll,
    Edit,
    GateCommand,
    Reject,
    RemoveNonGoal,
    Rework,
)
from haytham.pipeline.commands import Override as OverrideCommand
from haytham.pipeline.staleness import StaleCheck, describe, stale_checks
from haytham.pipeline.staleness import stale_stages as stale_stages
from haytham.schemas.anchor import AUTO, LEAVE_OPEN, ConceptAnchor, reviewer_name
from haytham.schemas.gate import STALE_CHECKS, AnchorEdit, Clarification, GateRecord, Override
from haytham.schemas.verification import ReviewArtifact, ReviewIssue
from haytham.stages import Phase, get_stage, next_action, phase_stages
from haytham.state import RunStatus, SessionState, gate_of
from haytham.storage.protocol import now


@dataclass(frozen=True)
class BlockingItem:
    """One thing that blocks approval: ``id`` is what an override names (``violation:…``,
    ``check:…``, ``finding:…``, a stage blocker's own id), ``stage`` where it is, if anywhere."""

    id: str
    stage: str | None
    message: str


@dataclass(frozen=True)
class GateDecision:
    """What a gate command changes. ``None`` fields stay as they are."""

    record: GateRecord
    route: str | None = None
    status: RunStatus | None = None
    anchor: ConceptAnchor | None = None
    reviews: dict[str, ReviewArtifact] | None = None


def phase_for_gate(gate: int) -> Phase:
    """The phase gate ``gate`` closes (1 WHY … 4 STORIES), or one sentence if there is no such gate."""
    if not isinstance(gate, int) or not 1 <= gate <= 4:
        raise InputError(f"Gate must be 1, 2, 3 or 4, not {gate!r}.")
    return list(Phase)[gate - 1]


def blocking_items(state: SessionState, phase: Phase) -> list[BlockingItem]:
    """Everything that must be resolved or overridden before this gate can be approved."""
    items: list[BlockingItem] = []
    for spec in phase_stages(phase):
        out = state.outputs.get(spec.slug)
        blocker = spec.blocker(out.payload) if out is not None and spec.blocker else None
        if blocker is not None:
            items.append(BlockingItem(blocker[0], spec.slug, blocker[1]))
    verification = state.verifications.get(phase.value)
    if verification is not None:
        for v in verification.blocking():
            items.append(
                BlockingItem(
                    f"violation:{v.invariant}:{v.stage}", v.stage, f"{v.invariant}: {v.violation}"
                )
            )
        if verification.status == "inconclusive":
            items.append(
                BlockingItem(
                    "verification:inconclusive",
                    None,
                    f"Verification inconclusive: {verification.reason}",
                )
            )
    for spec in phase_stages(phase):
        meta = state.stage_meta.get(spec.slug)
        for n, problem in enumerate(meta.problems if meta else [], 1):
            items.append(BlockingItem(f"check:{spec.slug}:{n}", spec.slug, problem))
        for n, f in enumerate(state.validations.get(spec.slug, []), 1):
            if f.severity == "blocking":
                items.append(
                    BlockingItem(f"finding:{f.validator}:{spec.slug}:{n}", spec.slug, f.message)
                )
    return items


def open_blocking(state: SessionState, phase: Phase) -> list[BlockingItem]:
    """The blocking items of ``phase``'s gate not overridden in its current round."""
    record = gate_of(state.gates, phase)
    done = {o.target for o in record.overrides if o.round == record.round}
    return [i for i in blocking_items(state, phase) if i.id not in done]


GateItemState = Literal["open", "resolved", "overridden"]
AMBIGUITY = "ambiguity"


@dataclass(frozen=True)
class GateItem:
    """One thing that blocks a gate, or did in its current round: an ambiguous invariant
    (Gate 1; id ``ambiguity:<property>``) or a blocking item of :func:`blocking_items` (one
    per id: an override of an id covers all its messages). The one computation of what blocks
    a gate, read by the decision panel, the gate's history and the approval check alike."""

    id: str
    stage: str | None
    messages: tuple[str, ...]
    state: GateItemState
    note: str = ""  # the override's reason, or the clarified value
    auto: bool = False  # overridden or clarified automatically, not by the reviewer

    @property
    def kind(self) -> str:
        """The item's kind, the first part of its id (``ambiguity``, ``violation``, ``finding`` …)."""
        return self.id.split(":", 1)[0]


def gate_items(state: SessionState, phase: Phase) -> list[GateItem]:
    """Every item that blocks ``phase``'s gate or did in its current round, in panel order:
    the ambiguities (open, then clarified), then the blocking items (open or overridden)."""
    record = gate_of(state.gates, phase)
    out: list[GateItem] = []
    if phase is Phase.WHY and state.anchor is not None:
        pending = state.anchor.open_ambiguities()
        out += [
            GateItem(f"{AMBIGUITY}:{i.property}", None, (i.ambiguity or "",), "open")
            for i in pending
        ]
        open_props = {i.property for i in pending}
        clarified = {c.invariant: c for c in record.clarifications}
        out += [
            GateItem(
                f"{AMBIGUITY}:{prop}",
                None,
                (),
                "resolved",
                note="left open: your idea does not say (no value)" if c.open else c.choice,
                auto=c.auto,
            )
            for prop, c in clarified.items()
            if prop not in open_props
        ]
    overrides = {o.target: o for o in record.overrides if o.round == record.round}
    seen: dict[str, int] = {}
    for item in blocking_items(state, phase):
        if item.id in seen:
            row = out[seen[item.id]]
            out[seen[item.id]] = replace(row, messages=(*row.messages, item.message))
            continue
        seen[item.id] = len(out)
        done = overrides.get(item.id)
        out.append(
            GateItem(item.id, item.stage, (item.message,), "open")
            if done is None
            else GateItem(
                item.id, item.stage, (item.message,), "overridden", note=done.reason, auto=done.auto
            )
        )
    return out


def open_items(state: SessionState, phase: Phase) -> list[GateItem]:
    """What must still be resolved (ambiguities clarified, the rest overridden or reworked)
    before ``phase``'s gate can be approved."""
    return [i for i in gate_items(state, phase) if i.state == "open"]


def apply_command(state: SessionState, phase: Phase, command: GateCommand) -> GateDecision:
    """What ``command`` at ``phase``'s gate changes (raises and changes nothing on error)."""
    record = gate_of(state.gates, phase)
    if record.status != "open":
        raise GateError(
            f"Gate {phase.gate} is not open (it is {record.status}); "
            "check `haytham status` for where the session is."
        )
    match command:
        case Approve():
            return _approve(state, phase, record, command)
        case Reject():
            return _reject(record, command)
        case Rework():
            return _rework(state, phase, record, command)
        case OverrideCommand():
            return _override(state, phase, record, command)
        case Clarify():
            return _clarify(state, phase, record, command)
        case ClarifyAll():
            return _clarify_all(state, phase, record, command)
        case Edit():
            return _edit(state, phase, record, command)
        case RemoveNonGoal():
            return _remove_non_goal(state, phase, record, command)


def _anchor(state: SessionState, phase: Phase) -> ConceptAnchor:
    if phase is not Phase.WHY:
        raise GateError("The concept anchor can only be clarified or edited at Gate 1.")
    if state.anchor is None:
        raise GateError("This session has no concept anchor yet.")
    return state.anchor


def _approve(
    state: SessionState, phase: Phase, record: GateRecord, command: Approve
) -> GateDecision:
    if phase is Phase.WHY and state.anchor is not None:
        pending = state.anchor.open_ambiguities()
        if pending:
            names = ", ".join(i.property for i in pending)
            raise GateError(
                f"Gate 1 cannot be approved: {len(pending)} invariant(s) need "
                f"clarification first ({names}); use `haytham clarify`."
            )
    overrides = list(record.overrides)
    stale = stale_checks(state, phase)
    if stale:
        reason = command.override_stale.strip()
        if not reason:
            raise GateError(
                f"Gate {phase.gate} cannot be approved while its checks are stale "
                f"({describe(stale)}): re-check them (verifier and validators only, "
                f"`haytham recheck`), re-run from {_first_stage(stale)}, or approve with an "
                "explicit override and its reason."
            )
        overrides.append(
            Override(
                target=STALE_CHECKS,
                reason=reason,
                auto=command.auto,
                round=record.round,
                at=now(),
                by=_who(command),
            )
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
        update={
            "status": "approved",
            "note": command.note,
            "decided_at": now(),
            "overrides": overrides,
        }
    )
    nxt = next_action(phase)
    status = RunStatus.DONE if nxt == "end" else RunStatus.RUNNING
    return GateDecision(rec, route=nxt, status=status)


def _first_stage(stale: list[StaleCheck]) -> str:
    slug = next((c.stage for c in stale if c.stage), None)
    spec = get_stage(slug) if slug else phase_stages(stale[0].phase)[0]
    return f"Stage {spec.number} · {spec.title}"


def _who(command: GateCommand) -> str:
    """Who gave the command: ``by`` when the caller says, else the local user (or auto)."""
    if command.auto:
        return AUTO
    return (command.by or "").strip() or reviewer_name()


def _reject(record: GateRecord, command: Reject) -> GateDecision:
    rec = record.model_copy(
        update={"status": "rejected", "note": command.note, "decided_at": now()}
    )
    return GateDecision(rec, route="end", status=RunStatus.REJECTED)


def _rework(state: SessionState, phase: Phase, record: GateRecord, command: Rework) -> GateDecision:
    spec = get_stage(command.stage)
    if spec.phase is not phase:
        allowed = ", ".join(s.slug for s in phase_stages(phase))
        raise GateError(
            f"Gate {phase.gate} can send back only its own stages ({allowed}); "
            f"use `haytham clear-from` to redo {spec.slug}."
        )
    feedback = command.feedback.strip()
    if not feedback:
        raise InputError("Rework needs feedback: say what the stage must change.")
    review = ReviewArtifact(
        verdict="rework",
        source="reviewer",
        round=record.round,
        issues=[ReviewIssue(severity="blocking", stage=spec.slug, detail=feedback)],
    )
    reviews = {**state.reviews, spec.slug: review}
    rec = record.model_copy(
        update={
            "status": "rework_requested",
            "rework_stage": spec.slug,
            "feedback": feedback,
            "decided_at": now(),
        }
    )
    return GateDecision(rec, route=spec.action, status=RunStatus.RUNNING, reviews=reviews)


def _override(
    state: SessionState, phase: Phase, record: GateRecord, command: OverrideCommand
) -> GateDecision:
    reason = command.reason.strip()
    if not reason:
        raise InputError("An override needs a reason; say why the finding does not apply.")
    open_items = open_blocking(state, phase)
    target = command.target
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
    auto = command.auto
    by = _who(command)
    added = [
        Override(target=i.id, reason=reason, auto=auto, round=record.round, at=now(), by=by)
        for i in chosen
    ]
    rec = record.model_copy(update={"overrides": [*record.overrides, *added]})
    return GateDecision(rec)


def _clarify(
    state: SessionState, phase: Phase, record: GateRecord, command: Clarify
) -> GateDecision:
    one = ClarifyAll(choices={command.invariant: command.choice}, auto=command.auto, by=command.by)
    return _clarify_all(state, phase, record, one)


def _clarify_all(
    state: SessionState, phase: Phase, record: GateRecord, command: ClarifyAll
) -> GateDecision:
    anchor = _anchor(state, phase)
    choices = command.choices
    if not choices:
        raise InputError("No clarification choices were given.")
    auto = command.auto
    by = _who(command)
    added = []
    for prop, choice in choices.items():
        anchor = anchor.resolve(prop, choice, by_user=not auto, who=by)
        inv = anchor.invariant(prop)
        added.append(
            Clarification(
                invariant=inv.property,
                choice=LEAVE_OPEN if inv.is_open else inv.value,
                auto=auto,
                at=inv.decided_at or now(),
                by=by,
                open=inv.is_open,
            )
        )
    rec = record.model_copy(update={"clarifications": [*record.clarifications, *added]})
    return GateDecision(rec, anchor=anchor)


def _edit(state: SessionState, phase: Phase, record: GateRecord, command: Edit) -> GateDecision:
    anchor = _anchor(state, phase)
    prop = command.invariant
    before = anchor.invariant(prop).shown_value()
    by = _who(command)
    anchor = anchor.edit_value(prop, command.value, who=by)
    edit = AnchorEdit(
        kind="edit_value",
        target=anchor.invariant(prop).property,
        before=before,
        after=anchor.invariant(prop).shown_value(),
        at=now(),
        by=by,
    )
    return GateDecision(record.model_copy(update={"edits": [*record.edits, edit]}), anchor=anchor)


def _remove_non_goal(
    state: SessionState, phase: Phase, record: GateRecord, command: RemoveNonGoal
) -> GateDecision:
    anchor = _anchor(state, phase)
    text = command.text
    anchor = anchor.remove_non_goal(text)
    edit = AnchorEdit(
        kind="remove_non_goal", target="non_goals", before=text, at=now(), by=_who(command)
    )
    return GateDecision(record.model_copy(update={"edits": [*record.edits, edit]}), anchor=anchor)
