"""A gate's history, from every step the session persisted (Burr's ``state.db`` rows).

The gate record in the latest state holds only the current round (its feedback and rework stage
are overwritten by the next rework), so the history is read from the sequence of states:

- each round the gate opened (with the verifier's result and, after automatic rework, its note);
- each automatic rework, with the review the verifier or a validator sent the stage (issues and
  suggestions), and each rework the reviewer requested, with the feedback;
- overrides with their reasons, clarifications and anchor edits, approvals and rejections;
- the re-runs that cleared the gate (``clear-from``);
- for every rework, what changed in the key item lists of the stages that re-ran (scope items,
  capabilities, decisions, stories: added, removed and changed items by id and title), and what
  that did to the anchor's invariants (:mod:`haytham.changes.impact`: carriers lost or gained, items
  moved in or out of scope, pins contradicted; broken ones named).

:func:`gate_history` is pure (steps in, history out); :func:`load_steps` is the one reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import groupby
from typing import Any, Literal

from pydantic import BaseModel

from haytham.changes.impact import compute_impact, impact_lines
from haytham.errors import SessionCorrupt
from haytham.pipeline.gates import open_items
from haytham.pipeline.graph import gate_name, verify_name
from haytham.schemas.envelope import StageOutput
from haytham.schemas.gate import STALE_CHECKS, GateRecord
from haytham.schemas.revision import Impact, Revision
from haytham.stages import BY_SLUG, STAGES, Phase, phase_stages
from haytham.state import SessionState, check_row, state_from_row
from haytham.storage.protocol import Session

AUTO_FEEDBACK = "[automatic rework by the verifier] "
"""How ``verify_phase`` marks a gate record's feedback written by the automatic rework."""

Kind = Literal[
    "opened",
    "auto_rework",
    "rework",
    "override",
    "clarification",
    "edit",
    "approved",
    "rejected",
    "cleared",
    "inherited",
    "revised",
    "recheck",
]
_TITLE_KEYS = ("title", "name", "need", "statement", "description")


# -- what a history is made of ------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One persisted step: where the run stood and the state after it."""

    seq: int
    position: str
    state: SessionState
    at: str | None = None  # when the step was saved (UTC, ISO 8601)
    stages: tuple[str, ...] = ()  # every stage with an output (also those not loaded)


@dataclass(frozen=True)
class Item:
    """One item of a key list (a capability, a story …), named by its id and its title."""

    id: str
    title: str


@dataclass(frozen=True)
class ItemChange:
    """An item that kept its id across a re-run but changed: its new and old title and which
    of its fields differ."""

    id: str
    title: str
    before_title: str
    fields: tuple[str, ...]  # the item's fields that changed


@dataclass(frozen=True)
class FieldDiff:
    """One key list of a payload (``in_scope``, ``functional``, ``decisions``, ``stories`` …)."""

    field: str
    added: tuple[Item, ...] = ()
    removed: tuple[Item, ...] = ()
    changed: tuple[ItemChange, ...] = ()
    unchanged: int = 0

    @property
    def changes(self) -> int:
        """How many items were added, removed or changed in this list."""
        return len(self.added) + len(self.removed) + len(self.changed)


@dataclass(frozen=True)
class StageDiff:
    """A stage's key item lists before and after it re-ran."""

    stage: str
    title: str
    fields: tuple[FieldDiff, ...] = ()
    summary_changed: bool = False  # its one-line summary (``tldr``) changed
    # what the change did to the anchor's invariants (haytham.changes.impact), in plain sentences
    invariants: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()  # ids of the invariants it broke, by code's check

    @property
    def changes(self) -> int:
        """How many items changed across the stage's key lists."""
        return sum(f.changes for f in self.fields)


@dataclass(frozen=True)
class Entry:
    """One line of a gate's timeline."""

    kind: Kind
    round: int  # the gate round it belongs to (a rework before round n opens belongs to n)
    summary: str  # one plain sentence
    at: str | None = None
    stage: str | None = None
    details: tuple[str, ...] = ()  # issues, suggestions, items, before/after
    feedback: str = ""  # the reviewer's rework feedback, or the override reason
    diffs: tuple[StageDiff, ...] = ()  # reworks: what the re-run changed
    seq: int = 0


@dataclass(frozen=True)
class GateHistory:
    """A gate's timeline: every round it opened, the reworks, overrides and decisions logged at
    it, oldest first (what the gate page's History shows)."""

    gate: int
    phase: str
    entries: tuple[Entry, ...] = ()

    @property
    def rounds(self) -> int:
        """How many times the gate opened (0: not reached yet)."""
        return max((e.round for e in self.entries if e.kind == "opened"), default=0)

    @property
    def reworks(self) -> tuple[Entry, ...]:
        """The reviewer's and the automatic reworks, oldest first."""
        return tuple(e for e in self.entries if e.kind in ("rework", "auto_rework"))

    def to_dict(self) -> dict[str, Any]:
        """The history as plain data for JSON, ``rounds`` included."""
        return asdict(self) | {"rounds": self.rounds}


# -- the diff of a stage's key fields -----------------------------------------------------------
def _title(item: BaseModel) -> str:
    for key in _TITLE_KEYS:
        value = getattr(item, key, None)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def key_lists(payload: Any) -> dict[str, dict[str, tuple[str, dict[str, Any]]]]:
    """A payload's lists of items with an ``id``: field -> id -> (title, the item as JSON)."""
    out: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {}
    if not isinstance(payload, BaseModel):
        return out
    for name in type(payload).model_fields:
        value = getattr(payload, name, None)
        if not isinstance(value, list) or not value:
            continue
        if not all(
            isinstance(v, BaseModel) and isinstance(getattr(v, "id", None), str) for v in value
        ):
            continue
        out[name] = {v.id: (_title(v), v.model_dump(mode="json")) for v in value}
    return out


def diff_outputs(slug: str, before: StageOutput | None, after: StageOutput | None) -> StageDiff:
    """What changed in ``slug``'s key item lists (by id; an item is changed when any of its
    fields differs, and the changed fields are named)."""
    old = key_lists(before.payload) if before is not None else {}
    new = key_lists(after.payload) if after is not None else {}
    fields: list[FieldDiff] = []
    for name in [*new, *(n for n in old if n not in new)]:
        a, b = old.get(name, {}), new.get(name, {})
        changed = []
        for item_id in b:
            if item_id in a and a[item_id][1] != b[item_id][1]:
                keys = sorted(
                    k
                    for k in {*a[item_id][1], *b[item_id][1]}
                    if a[item_id][1].get(k) != b[item_id][1].get(k)
                )
                changed.append(ItemChange(item_id, b[item_id][0], a[item_id][0], tuple(keys)))
        fields.append(
            FieldDiff(
                field=name,
                added=tuple(Item(i, t) for i, (t, _) in b.items() if i not in a),
                removed=tuple(Item(i, t) for i, (t, _) in a.items() if i not in b),
                changed=tuple(changed),
                unchanged=sum(1 for i in b if i in a and a[i][1] == b[i][1]),
            )
        )
    summary = (before.tldr if before else "") != (after.tldr if after else "")
    return StageDiff(slug, BY_SLUG[slug].title, tuple(fields), summary_changed=summary)


def with_impact(diff: StageDiff, impact: Impact) -> StageDiff:
    """``diff`` with the computed impact on the invariants in words."""
    return replace(diff, invariants=tuple(impact_lines(impact)), broken=tuple(impact.broken))


def rerun_diffs(phase: Phase, before: SessionState, after: SessionState) -> tuple[StageDiff, ...]:
    """The diffs of ``phase``'s stages that ran again between ``before`` and ``after``, each
    with what it did to the invariants (against the anchor it re-ran with)."""
    out = []
    for spec in phase_stages(phase):
        old, new = before.stage_meta.get(spec.slug), after.stage_meta.get(spec.slug)
        if new is None or (old is not None and old.at == new.at and old.attempts == new.attempts):
            continue  # did not run again (yet)
        if spec.slug not in before.outputs and spec.slug not in after.outputs:
            continue
        old_out, new_out = before.outputs.get(spec.slug), after.outputs.get(spec.slug)
        impact = compute_impact(spec.slug, old_out, new_out, after.anchor or before.anchor)
        out.append(with_impact(diff_outputs(spec.slug, old_out, new_out), impact))
    return tuple(out)


# -- the timeline ---------------------------------------------------------------------------------
def _opened(step: Step, phase: Phase, record: GateRecord) -> Entry:
    state = step.state
    details: list[str] = []
    verification = state.verifications.get(phase.value)
    if verification is not None and verification.status != "off":
        line = f"Verification {verification.status}"
        if verification.status == "inconclusive" and verification.reason:
            line += f": {verification.reason}"
        details.append(line)
    if record.feedback.startswith(AUTO_FEEDBACK):
        note = record.feedback[len(AUTO_FEEDBACK) :]
        details.append(f"Automatic rework: {note}" if note else "After automatic rework")
    elif record.feedback and record.rework_stage:
        details.append(f"After your rework of {_stage_title(record.rework_stage)}")
    blocking = open_items(state, phase)  # what the decision panel lists as open
    details.append(
        f"{len(blocking)} blocking item{'s' if len(blocking) != 1 else ''} to resolve"
        if blocking
        else "Nothing blocking"
    )
    return Entry(
        "opened",
        record.round,
        f"Gate {phase.gate} opened" + (" again" if record.round > 1 else ""),
        at=record.opened_at or step.at,
        details=tuple(details),
        seq=step.seq,
    )


def _auto_rework(step: Step, phase: Phase, round_: int) -> Entry:
    state = step.state
    tracker = state.rework[phase.value]
    slugs = [s.slug for s in phase_stages(phase)]
    reviews = {
        slug: r
        for slug, r in state.reviews.items()
        if slug in slugs and r.source != "reviewer" and r.round == tracker.round
    }
    details: list[str] = []
    for slug, review in reviews.items():
        for issue in review.issues:
            details.append(f"{issue.severity}: {_stage_title(issue.stage or slug)}: {issue.detail}")
    suggestions = list(dict.fromkeys(s for r in reviews.values() for s in r.suggestions))
    details += [f"Suggestion: {s}" for s in suggestions]
    stage = tracker.last_stage
    sources = sorted({r.source for r in reviews.values()}) or ["verifier"]
    who = " and ".join("the verifier" if s == "verifier" else "a validator" for s in sources)
    return Entry(
        "auto_rework",
        round_,
        f"Automatic rework {tracker.round}: {who} sent {_stage_title(stage)} back",
        at=step.at,
        stage=stage,
        details=tuple(details),
        seq=step.seq,
    )


def _revised(prev: Step, step: Step, revision: Revision, record: GateRecord | None) -> Entry:
    """A change request applied to one of the phase's stages (``haytham revise``)."""
    details = [f"Why: {revision.why}"] if revision.why else []
    slug = revision.stage
    before, after = prev.state.outputs.get(slug), step.state.outputs.get(slug)
    impact = revision.impact or compute_impact(slug, before, after, step.state.anchor)
    details.append(f"Invariants touched (code's check): {', '.join(impact.touched) or 'none'}")
    if revision.impact is not None:
        details += [f"Disagreement: {d}" for d in revision.impact.disagreements()]
    return Entry(
        "revised",
        record.round if record else 0,
        f"Change request applied to {_stage_title(slug)}",
        at=revision.at,
        stage=slug,
        details=tuple(details),
        feedback=revision.request,
        diffs=(with_impact(diff_outputs(slug, before, after), impact),),
        seq=step.seq,
    )


def _record_changes(step: Step, phase: Phase, old: GateRecord, new: GateRecord) -> list[Entry]:
    """Entries for what a gate command added to the record (same round)."""
    out: list[Entry] = []
    r = new.round
    for at, group in _grouped(new.clarifications[len(old.clarifications) :]):
        auto = all(c.auto for c in group)
        out.append(
            Entry(
                "clarification",
                r,
                f"Clarified {len(group)} invariant(s)" + (" (automatically)" if auto else ""),
                at=at,
                details=tuple(
                    f"{c.invariant}: left open (the idea does not say; no value)"
                    if c.open
                    else f"{c.invariant} = {c.choice}"
                    for c in group
                ),
                seq=step.seq,
            )
        )
    for edit in new.edits[len(old.edits) :]:
        details: tuple[str, ...]
        if edit.kind == "edit_value":
            summary = f"Edited the anchor: {edit.target}"
            details = (f"Before: {edit.before}", f"After: {edit.after}")
        else:
            summary = "Removed a non-goal from the anchor"
            details = (f"Removed: {edit.before}",)
        out.append(Entry("edit", r, summary, at=edit.at, details=details, seq=step.seq))
    for done in new.rechecks[len(old.rechecks) :]:
        out.append(
            Entry(
                "recheck",
                r,
                "Re-checked against the current anchor (verifier and validators, no stage re-run)"
                + (" automatically" if done.by == "auto-approve" else ""),
                at=done.at,
                details=tuple(
                    x
                    for x in (
                        f"Why: {done.why}" if done.why else "",
                        f"Verification: {done.verification}" if done.verification else "",
                    )
                    if x
                ),
                seq=step.seq,
            )
        )
    added = new.overrides[len(old.overrides) :]
    for (at, _reason), group in _by_reason(added):
        auto = all(o.auto for o in group)
        stale = [o for o in group if o.target == STALE_CHECKS]
        out.append(
            Entry(
                "override",
                r,
                "Approved with stale checks (override)"
                if stale and len(stale) == len(group)
                else f"Overrode {len(group)} blocking item(s)"
                + (" (automatically)" if auto else ""),
                at=at,
                details=tuple(
                    "checks made before the anchor or an output changed"
                    if o.target == STALE_CHECKS
                    else o.target
                    for o in group
                ),
                feedback=group[0].reason,
                seq=step.seq,
            )
        )
    if new.status != old.status and new.status in ("approved", "rejected", "rework_requested"):
        decided_at = new.decided_at or step.at
        if new.status == "rework_requested":
            stage = new.rework_stage
            out.append(
                Entry(
                    "rework",
                    r,
                    f"You sent {_stage_title(stage)} back for rework",
                    at=decided_at,
                    stage=stage,
                    feedback=new.feedback,
                    seq=step.seq,
                )
            )
        else:
            verb = "Approved" if new.status == "approved" else "Rejected"
            out.append(
                Entry(
                    new.status,
                    r,
                    f"{verb} Gate {phase.gate}",
                    at=decided_at,
                    feedback=new.note,
                    seq=step.seq,
                )
            )
    return out


def _blank(record: GateRecord) -> dict[str, Any]:
    """``record`` before any command of its round (what an inherited record is compared with)."""
    return {"gate": record.gate, "phase": record.phase, "status": "open", "round": record.round}


def _grouped(items: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    """Consecutive clarifications of one kind (yours, or automatic) added in one step: one
    command, one entry (each item has its own time; the first one's is the entry's)."""
    return [(g[0].at, g) for _, run in groupby(items, key=lambda i: i.auto) if (g := list(run))]


def _by_reason(items: Sequence[Any]) -> list[tuple[tuple[str, str], list[Any]]]:
    """Consecutive overrides with one reason added in one step (an "override all")."""
    runs = groupby(items, key=lambda i: (i.reason, i.auto))
    return [((g[0].at, g[0].reason), g) for _, run in runs if (g := list(run))]


def _stage_title(slug: str | None) -> str:
    spec = BY_SLUG.get(slug or "")
    return spec.title if spec else (slug or "a stage")


def _cleared_from(prev: Step, cur: Step) -> str | None:
    gone = [s for s in STAGES if s.slug in prev.stages and s.slug not in cur.stages]
    return gone[0].slug if gone else None


def gate_history(steps: Iterable[Step], gate: int) -> GateHistory:
    """Gate ``gate``'s timeline from the session's steps (oldest first)."""
    phase = list(Phase)[gate - 1]
    verify, gate_step = verify_name(phase), gate_name(phase)
    entries: list[Entry] = []
    pending: list[tuple[int, SessionState]] = []  # reworks waiting for their re-run's result

    def settle(after: SessionState) -> None:
        for index, before in pending:
            entries[index] = replace(entries[index], diffs=rerun_diffs(phase, before, after))
        pending.clear()

    slugs = {s.slug for s in phase_stages(phase)}
    prev: Step | None = None
    for step in steps:
        state = step.state
        record = state.gates.get(gate)
        old = prev.state.gates.get(gate) if prev is not None else None
        if prev is None and record is not None:  # a fork's (or a rebuilt state's) first step
            entries.append(
                Entry(
                    "inherited",
                    record.round,
                    "Carried over from before this session's first step (forked from another "
                    "session, or a rebuilt state)",
                    at=record.opened_at,
                    seq=step.seq,
                )
            )
            entries += _record_changes(step, phase, GateRecord(**_blank(record)), record)
        revised = state.revisions[len(prev.state.revisions) :] if prev is not None else []
        for revision in revised:
            if revision.stage in slugs:
                entries.append(_revised(prev, step, revision, old or record))  # type: ignore[arg-type]
        if old is not None and record is None:  # cleared: the phase runs again from scratch
            settle(prev.state)  # type: ignore[union-attr]
            slug = _cleared_from(prev, step)  # type: ignore[arg-type]
            why = (
                f"Re-run after the change request to {_stage_title(revised[-1].stage)}"
                if revised
                else f"Re-run from {_stage_title(slug)}"
            )
            entries.append(
                Entry(
                    "cleared",
                    old.round,
                    f"{why}: this gate's earlier decisions no longer apply",
                    at=step.at,
                    stage=revised[-1].stage if revised else slug,
                    seq=step.seq,
                )
            )
        if step.position == verify:
            settle(state)
            tracker = state.rework.get(phase.value)
            before = prev.state.rework.get(phase.value) if prev is not None else None
            if (
                tracker is not None
                and tracker.round > (before.round if before else 0)
                and state.route is not None
            ):
                round_ = (record.round if record else 0) + 1
                entries.append(_auto_rework(step, phase, round_))
                pending.append((len(entries) - 1, state))
        opened = record is not None and record.status == "open" and record.round > 0
        if opened and (old is None or old.round != record.round):  # type: ignore[union-attr]
            entries.append(_opened(step, phase, record))  # type: ignore[arg-type]
            old = None
        rechecked = (
            record is not None and old is not None and len(record.rechecks) > len(old.rechecks)
        )
        if record is not None and old is not None and (step.position == gate_step or rechecked):
            added = _record_changes(step, phase, old, record)
            for entry in added:
                entries.append(entry)
                if entry.kind == "rework":
                    pending.append((len(entries) - 1, state))
        prev = step
    if prev is not None:
        settle(prev.state)  # a rework still running: what changed so far
    return GateHistory(gate, phase.value, tuple(entries))


# -- reading the steps ---------------------------------------------------------------------------
_FIELDS = (
    "status",
    "route",
    "gates",
    "rework",
    "reviews",
    "verifications",
    "stage_meta",
    "revisions",
    "anchor",  # the impact on the invariants; Gate 1's ambiguities (gate_items)
)
_PER_STAGE = ("outputs", "validations")


def _unwrap(value: Any) -> Any:
    return value["json"] if isinstance(value, dict) and value.keys() == {"json"} else value


def _utc(created: Any) -> str | None:
    text = str(created or "").strip()
    if not text:
        return None
    text = text.replace(" ", "T", 1)
    return text if "+" in text[10:] or text.endswith("Z") else f"{text}+00:00"


def load_steps(files: Session, phase: Phase) -> list[Step]:
    """Every completed step of the session, oldest first, with only what ``phase``'s history
    reads (its stages' outputs and findings, the gates, reviews, reworks, verifications, the
    anchor).
    Read-only: a missing database or table is an empty history."""
    slugs = {s.slug for s in phase_stages(phase)}
    steps = []
    for row in files.state_rows(completed=True):
        try:
            data = row.state
            check_row(data)  # nothing in it names code, whatever is picked below
            picked = {k: data[k] for k in _FIELDS if k in data}
            stages: tuple[str, ...] = ()
            for name in _PER_STAGE:
                if name in data:
                    value = _unwrap(data[name]) or {}
                    if name == "outputs":
                        stages = tuple(value)
                    picked[name] = {"json": {k: v for k, v in value.items() if k in slugs}}
            state = SessionState.of(state_from_row(picked))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise SessionCorrupt(files.state_label, str(exc)) from None
        steps.append(Step(row.sequence_id, row.position, state, _utc(row.created_at), stages))
    return steps


__all__ = [
    "Entry",
    "FieldDiff",
    "GateHistory",
    "Item",
    "ItemChange",
    "StageDiff",
    "Step",
    "diff_outputs",
    "gate_history",
    "key_lists",
    "load_steps",
    "rerun_diffs",
]
