"""Stage 1 — idea-analysis (WHY): problems, segments, value proposition, lean canvas."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.stages.base import Phase, StageSpec


class Problem(TolerantModel):
    """A problem the idea addresses, as the person feels it: when, today's workaround, how much it
    hurts."""

    problem: str
    trigger_moment: str = Field(description="When the person feels the problem.")
    current_workaround: str = Field(description="What they do today instead.")
    pain: Literal["low", "medium", "high"] = "medium"


class Segment(TolerantModel):
    """A group of users the founder named, defined by what they already do."""

    name: str
    behaviour: str = Field(description="Observable behaviour that defines the segment.")


class LeanCanvas(TolerantModel):
    """The idea on a Lean Canvas: one or two sentences per box."""

    problem: str = ""
    customer_segments: str = ""
    unique_value_proposition: str = ""
    solution: str = ""
    channels: str = ""
    revenue_streams: str = ""
    cost_structure: str = ""
    key_metrics: str = ""
    unfair_advantage: str = ""


class HealthSignal(TolerantModel):
    """One sign of the concept's health (access to first users, willingness to pay, …) and how
    strong the idea shows it to be."""

    signal: str
    status: Literal["strong", "weak", "unclear"]
    note: str = ""


class IdeaAnalysis(TolerantModel):
    """Stage 1's payload: the idea laid out as the founder described it, for every later stage."""

    problems: list[Problem] = Field(min_length=1, max_length=5)
    target_segments: list[Segment] = Field(min_length=1, max_length=5)
    value_proposition: str
    solution_concept: str
    lean_canvas: LeanCanvas = Field(default_factory=LeanCanvas)
    concept_health: list[HealthSignal] = Field(default_factory=list, max_length=8)


class IdeaAnalysisOutput(StageOutput):
    """Stage 1's answer: the shared envelope with an IdeaAnalysis payload."""

    payload: IdeaAnalysis


SPEC = StageSpec(1, "idea-analysis", Phase.WHY, "Idea analysis", IdeaAnalysisOutput)
