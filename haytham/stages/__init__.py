"""The ten stages, in order. Each module: payload schema, Output envelope, deterministic code."""

from __future__ import annotations

from haytham.errors import InputError
from haytham.stages import (
    architecture_decisions,
    build_buy_analysis,
    capability_model,
    idea_analysis,
    market_context,
    mvp_scope,
    risk_assessment,
    story_generation,
    system_traits,
    validation_summary,
)
from haytham.stages.base import Phase, StageSpec, StageView

STAGES: tuple[StageSpec, ...] = tuple(
    m.SPEC
    for m in (
        idea_analysis,
        market_context,
        risk_assessment,
        validation_summary,
        mvp_scope,
        capability_model,
        system_traits,
        build_buy_analysis,
        architecture_decisions,
        story_generation,
    )
)
BY_SLUG: dict[str, StageSpec] = {s.slug: s for s in STAGES}
ANCHOR_SOURCE: StageSpec = STAGES[0]
"""The concept anchor is extracted right after this stage, from the idea and its output."""
VERDICT_STAGE: StageSpec = validation_summary.SPEC
"""The stage whose payload holds the GO / NO-GO / PIVOT verdict."""
STORY_STAGE: StageSpec = story_generation.SPEC
"""The stage whose payload holds the ordered stories (CSV, Jira and Linear exports)."""
ANCHOR_AGENT = "anchor-extraction"
"""The anchor extraction's name as a step: its agent, events and summary row."""
ANCHOR_ACTION = ANCHOR_AGENT.replace("-", "_")
"""... and as a Burr action."""


def get_stage(slug: str) -> StageSpec:
    """The stage named ``slug`` (case and outer spaces ignored).

    Raises:
        InputError: no stage has that slug; the message lists them.
    """
    spec = BY_SLUG.get(slug.strip().lower())
    if spec is None:
        raise InputError(f"Unknown stage {slug!r}; stages are: {', '.join(BY_SLUG)}.")
    return spec


def phase_stages(phase: Phase) -> tuple[StageSpec, ...]:
    """The stages of ``phase``, in pipeline order."""
    return tuple(s for s in STAGES if s.phase == phase)


def next_action(phase: Phase) -> str:
    """Where approving ``phase``'s gate leads: the next phase's first stage, or ``end``."""
    later = [s for s in STAGES if s.phase.gate == phase.gate + 1]
    return later[0].action if later else "end"


__all__ = [
    "ANCHOR_ACTION",
    "ANCHOR_AGENT",
    "ANCHOR_SOURCE",
    "STAGES",
    "STORY_STAGE",
    "VERDICT_STAGE",
    "BY_SLUG",
    "Phase",
    "StageSpec",
    "StageView",
    "get_stage",
    "next_action",
    "phase_stages",
]
