"""Re-check a phase against the current anchor: its validators and its verifier, no stage re-run.

A Gate 1 clarification changes the anchor the WHY stages were checked against; re-checking them
is the designed flow (the clarified anchor is what the reviewer confirmed), so the service does
it right after a clarification. A reviewer can ask for it too ("Re-check", ``haytham recheck``)
when an anchor edit left a phase's checks stale. The stages' outputs stay as they are; their
findings, the verification and the fingerprints of what was checked are renewed. No automatic
rework follows: what the re-check finds lands at the gate for the reviewer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haytham.pipeline.actions import Verifier
from haytham.pipeline.runner import PostValidator
from haytham.pipeline.staleness import checked_now, stamped
from haytham.stages import Phase, phase_stages
from haytham.state import SessionState, StageMeta
from haytham.storage.protocol import now
from haytham.verify.verdict import off


def recheck_phase(
    state: SessionState,
    phase: Phase,
    *,
    verifier: Verifier | None,
    post_validator: PostValidator | None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
) -> SessionState:
    """``state`` with ``phase``'s validators and verification run again on its outputs."""
    at = now()
    validations = dict(state.validations)
    divergence = dict(state.divergence)
    metas = dict(state.stage_meta)
    for spec in phase_stages(phase):
        if spec.slug not in state.outputs:
            continue
        if post_validator is not None:
            findings, similarity = post_validator(spec.slug, state, tool_calls)
            validations[spec.slug] = findings
            if similarity:
                divergence[spec.slug] = similarity
        meta = metas.get(spec.slug) or StageMeta()
        metas[spec.slug] = checked_now(meta, state, spec.slug, at)
    state = state.model_copy(
        update={"validations": validations, "divergence": divergence, "stage_meta": metas}
    )
    verification = off(phase, "verification is off") if verifier is None else verifier(phase, state)
    verification = stamped(verification, state, phase, at)
    return state.model_copy(
        update={"verifications": {**state.verifications, phase.value: verification}}
    )
