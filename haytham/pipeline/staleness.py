"""When a check is stale: what each check depends on, recorded when it runs, compared with now.

Two kinds of check stand behind a gate: each stage's **validators** (run right after the stage,
and again by a re-check) and the phase's **verification** (run before the gate opens, and again
by a re-check). Each records a :class:`~haytham.schemas.verification.Fingerprint` when it runs:
the digest of the anchor it checked against (``None`` for stage 1, which runs before the anchor
exists) and a digest of every stage output it read — for a stage's validators, the stage's own
output and the earlier outputs the stage was built from; for a verification, the phase's
outputs. A check is stale exactly when one of those has changed since it ran. A session from
before fingerprints falls back to the anchor digest the stage recorded when it ran.

Pure functions over :class:`SessionState`; the re-check itself is in :mod:`haytham.runs.service`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from haytham.schemas.envelope import StageOutput
from haytham.schemas.verification import Fingerprint, PhaseVerification
from haytham.stages import ANCHOR_SOURCE, STAGES, Phase, get_stage, phase_stages
from haytham.state import SessionState, StageMeta

ANCHOR = "the concept anchor"


def output_digest(out: StageOutput) -> str:
    """A fingerprint of a stage output's content (16 hex characters)."""
    blob = json.dumps(out.model_dump(mode="json"), sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def anchor_digest(state: SessionState) -> str | None:
    """The digest of the session's concept anchor (``None`` before it is extracted)."""
    return state.anchor.digest() if state.anchor is not None else None


def earlier_inputs(state: SessionState, slug: str) -> dict[str, str]:
    """Digests of the outputs of the stages before ``slug`` (what its prompt was built from)."""
    number = get_stage(slug).number
    return {
        s.slug: output_digest(state.outputs[s.slug])
        for s in STAGES
        if s.number < number and s.slug in state.outputs
    }


def uses_anchor(slug: str) -> bool:
    """Whether the stage works from the anchor: every stage after the one it is extracted from."""
    return get_stage(slug).number > ANCHOR_SOURCE.number


def stage_fingerprint(state: SessionState, slug: str, at: str | None = None) -> Fingerprint:
    """What ``slug``'s validators check now: the anchor (if the stage uses it), its output and
    its earlier inputs."""
    outputs = earlier_inputs(state, slug)
    if slug in state.outputs:
        outputs[slug] = output_digest(state.outputs[slug])
    anchor = anchor_digest(state) if uses_anchor(slug) else None
    return Fingerprint(anchor=anchor, outputs=outputs, at=at)


def phase_fingerprint(state: SessionState, phase: Phase, at: str | None = None) -> Fingerprint:
    """What ``phase``'s verifier checks now: the anchor and the phase's outputs."""
    outputs = {
        s.slug: output_digest(state.outputs[s.slug])
        for s in phase_stages(phase)
        if s.slug in state.outputs
    }
    return Fingerprint(anchor=anchor_digest(state), outputs=outputs, at=at)


def checked_now(meta: StageMeta, state: SessionState, slug: str, at: str) -> StageMeta:
    """``meta`` with what ``slug``'s validators just checked recorded."""
    return meta.model_copy(update={"checked": stage_fingerprint(state, slug, at)})


def stamped(
    verification: PhaseVerification, state: SessionState, phase: Phase, at: str
) -> PhaseVerification:
    """``verification`` with what it checked recorded (the anchor and the phase's outputs)."""
    return verification.model_copy(update={"checked": phase_fingerprint(state, phase, at)})


@dataclass(frozen=True)
class StaleCheck:
    """One check whose inputs changed after it ran. ``stage`` is ``None`` for the verification."""

    phase: Phase
    stage: str | None
    changed: tuple[str, ...]  # what changed, in words: "the concept anchor", stage titles


def _changed(recorded: Fingerprint, state: SessionState) -> tuple[str, ...]:
    out: list[str] = []
    current = anchor_digest(state)
    if recorded.anchor is not None and recorded.anchor != current:
        out.append(ANCHOR)
    for slug, digest in recorded.outputs.items():
        now = state.outputs.get(slug)
        if now is None or output_digest(now) != digest:
            out.append(get_stage(slug).title)
    return tuple(out)


def _stage_record(meta: StageMeta) -> Fingerprint:
    """What the stage's validators last checked (an older session: the anchor it ran with)."""
    return meta.checked or Fingerprint(anchor=meta.anchor)


def stale_checks(state: SessionState, phase: Phase | None = None) -> list[StaleCheck]:
    """Every stale check (of ``phase`` only, when given), in pipeline order, each stage's
    validators before its phase's verification."""
    found: list[StaleCheck] = []
    for p in [phase] if phase is not None else list(Phase):
        for spec in phase_stages(p):
            meta = state.stage_meta.get(spec.slug)
            if meta is None or spec.slug not in state.outputs:
                continue
            changed = _changed(_stage_record(meta), state)
            if changed:
                found.append(StaleCheck(p, spec.slug, changed))
        verification = state.verifications.get(p.value)
        if verification is not None and verification.checked is not None:
            changed = _changed(verification.checked, state)
            if changed:
                found.append(StaleCheck(p, None, changed))
    return found


def stale_stages(state: SessionState) -> list[str]:
    """Stages (in order) whose checks are stale: the anchor or an output they were checked
    against changed after their validators ran. A Gate 1 clarification re-checks its phase, so
    only a change nobody re-checked (an anchor edit, an older session) leaves a stage here."""
    return [c.stage for c in stale_checks(state) if c.stage is not None]


def stale_phases(state: SessionState) -> list[Phase]:
    """Phases with at least one stale check, in order."""
    return list(dict.fromkeys(c.phase for c in stale_checks(state)))


def describe(checks: list[StaleCheck]) -> str:
    """One clause for people: what changed, and which checks ran before it changed."""
    changed = list(dict.fromkeys(x for c in checks for x in c.changed))
    stages = list(dict.fromkeys(get_stage(c.stage).title for c in checks if c.stage))
    phases = list(dict.fromkeys(c.phase.value for c in checks if c.stage is None))
    parts = []
    if stages:
        parts.append("the checks of " + _listing(stages))
    if phases:
        parts.append(f"the {_listing(phases)} verification")
    return f"{_listing(changed) or 'their inputs'} changed after {' and '.join(parts)} ran"


def _listing(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]
