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


def get_stage(slug: str) -> StageSpec:
    spec = BY_SLUG.get(slug.strip().lower())
    if spec is None:
        raise InputError(f"Unknown stage {slug!r}; stages are: {', '.join(BY_SLUG)}.")
    return spec


def phase_stages(phase: Phase) -> tuple[StageSpec, ...]:
    return tuple(s for s in STAGES if s.phase == phase)


__all__ = ["STAGES", "BY_SLUG", "Phase", "StageSpec", "StageView", "get_stage", "phase_stages"]
