"""The automatic rework policy at a phase boundary (seed 004 applied), as a pure function.

After the phase verifier, :func:`decide` either sends the responsible stage back — with a
structured :class:`~haytham.schemas.verification.ReviewArtifact` per criticised stage, which the
runner injects into that stage's prompt under "Reviewer feedback to address" — or lets the gate
open. Triggers are the verifier's blocking violations and the blocking findings of the
deterministic validators (mechanical contracts come first; stage checks already had their own
re-ask inside the stage). The earliest criticised stage of the phase re-runs, and the phase's
later stages re-run after it.

Bounds: at most ``max_rounds`` automatic rounds per gate visit, and a stall — a violation that
comes back after a rework round — stops early. The gate then shows what is still violated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.base import normalize_key
from haytham.schemas.verification import PhaseVerification, ReviewArtifact, ReviewIssue
from haytham.stages import BY_SLUG, Phase, phase_stages
from haytham.state import ReworkTracker, SessionState
from haytham.verify.verdict import mechanical_failures

Outcome = Literal["rework", "clear", "max_rounds", "stalled"]


@dataclass(frozen=True)
class Issue:
    """One blocking problem a verifier or validator raised against a stage; ``key`` stays the
    same across reruns, so a rework that fixes nothing is seen as stalled."""

    key: str  # stable across reruns, for stall detection
    stage: str
    detail: str
    source: Literal["verifier", "validator"]


@dataclass(frozen=True)
class ReworkDecision:
    """What the verify action does next; ``route`` is set only for an automatic rework."""

    outcome: Outcome
    verification: PhaseVerification
    tracker: ReworkTracker
    route: str | None = None
    stage: str | None = None
    reviews: dict[str, ReviewArtifact] = field(default_factory=dict)
    note: str = ""

    def event(self) -> tuple[str, dict[str, Any]]:
        """The ``events.jsonl`` record of this decision: (type, data)."""
        data = {
            "phase": self.verification.phase,
            "outcome": self.outcome,
            "round": self.tracker.round,
            "note": self.note,
        }
        if self.outcome == "rework":
            return "rework_requested", {
                **data,
                "stage": self.stage,
                "source": "verifier",
                "reviews": {k: r.model_dump(mode="json") for k, r in self.reviews.items()},
            }
        if self.outcome in ("max_rounds", "stalled"):
            return "rework_stopped", data
        return "rework_cleared", data


def issues_of(phase: Phase, verification: PhaseVerification, state: SessionState) -> list[Issue]:
    """Blocking problems that automatic rework can address, in phase-stage order."""
    slugs = [s.slug for s in phase_stages(phase)]
    invariants = state.anchor.invariants if state.anchor else []
    properties = [normalize_key(i.property) for i in invariants]
    found = [
        Issue(f["key"], f["stage"], f["message"], "validator")
        for f in mechanical_failures(phase, state)
        if f["kind"] == "finding"
    ]
    for v in verification.blocking():
        stage = v.stage if v.stage in slugs else slugs[0]
        name = normalize_key(v.invariant)
        name = next((p for p in properties if p and p in name), name)  # the anchor's own name
        found.append(
            Issue(f"violation:{name}:{stage}", stage, f"{v.invariant}: {v.violation}", "verifier")
        )
    return sorted(found, key=lambda i: slugs.index(i.stage))


def _suggestions(issues: list[Issue], anchor: ConceptAnchor | None) -> list[str]:
    out: list[str] = []
    if anchor is not None:
        for inv in anchor.decided():
            name = normalize_key(inv.property)
            if any(name in i.key or inv.property in i.detail for i in issues):
                out.append(
                    f"Honour {inv.property} = {inv.value} (the founder said: "
                    f'"{inv.source}"), or depart from it openly in '
                    "anchor_compliance.invariants_overridden with reason and user impact."
                )
    out.append(
        "Change only what the issues name; keep everything that was not criticised, "
        "and say in content what you changed."
    )
    return out


def _artifacts(
    phase: Phase,
    issues: list[Issue],
    verification: PhaseVerification,
    anchor: ConceptAnchor | None,
    round_: int,
) -> dict[str, ReviewArtifact]:
    reviews: dict[str, ReviewArtifact] = {}
    for spec in phase_stages(phase):
        mine = [i for i in issues if i.stage == spec.slug]
        if not mine:
            continue
        flagged = [
            ReviewIssue(
                severity="warning",
                stage=spec.slug,
                detail=f"identity feature {g.original_feature!r} became {g.generic_replacement!r}",
            )
            for g in verification.identity_genericized
            if g.stage == spec.slug
        ]
        source = "verifier" if any(i.source == "verifier" for i in mine) else "validator"
        artifact = ReviewArtifact(
            verdict="rework",
            source=source,
            round=round_,
            issues=[ReviewIssue(severity="blocking", stage=i.stage, detail=i.detail) for i in mine]
            + flagged,
            suggestions=_suggestions(mine, anchor),
        )
        reviews[spec.slug] = artifact
    return reviews


def decide(
    phase: Phase, verification: PhaseVerification, state: SessionState, *, max_rounds: int
) -> ReworkDecision:
    """Rework the responsible stage, or open the gate (cleared, out of rounds, or stalled)."""
    tracker = state.rework.get(phase.value) or ReworkTracker()
    rounds = tracker.round
    verification = verification.model_copy(update={"round": rounds})
    issues = issues_of(phase, verification, state)
    keys = sorted({i.key for i in issues})
    done = ReworkTracker(round=rounds, last_stage=tracker.last_stage)
    if not issues:
        note = f"cleared after {rounds} automatic rework round(s)" if rounds else ""
        return ReworkDecision("clear", verification, done, note=note)
    listed = "; ".join(i.detail for i in issues[:5])
    repeated = sorted(set(keys) & set(tracker.keys))
    if repeated:
        note = (
            f"automatic rework stopped after {rounds} round(s): the same violation came "
            f"back ({', '.join(repeated)}); still blocking: {listed}"
        )
        return ReworkDecision("stalled", _warn(verification, note), done, note=note)
    if rounds >= max_rounds:
        note = (
            f"automatic rework stopped: {rounds} of {max_rounds} round(s) used; still "
            f"blocking: {listed}"
        )
        return ReworkDecision("max_rounds", _warn(verification, note), done, note=note)
    stage = issues[0].stage
    reviews = _artifacts(phase, issues, verification, state.anchor, rounds + 1)
    note = f"round {rounds + 1} of {max_rounds}: {stage} sent back ({listed})"
    return ReworkDecision(
        "rework",
        verification,
        ReworkTracker(round=rounds + 1, keys=keys, last_stage=stage),
        route=BY_SLUG[stage].action,
        stage=stage,
        reviews=reviews,
        note=note,
    )


def _warn(verification: PhaseVerification, note: str) -> PhaseVerification:
    sentence = note[0].upper() + note[1:]
    sentence += "" if sentence.endswith(".") else "."
    return verification.model_copy(update={"warnings": [*verification.warnings, sentence]})
