"""Stage 2 — market-context (WHY): jobs-to-be-done, market size, trends, competitors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.stages.base import Phase, StageSpec


class Competitor(TolerantModel):
    name: str
    jtbd_match: Literal["direct", "adjacent", "unrelated"] = Field(
        description="How closely it serves the same job-to-be-done."
    )
    pricing_evidence: str = ""


class MarketContext(TolerantModel):
    jobs_to_be_done: list[str] = Field(min_length=1, max_length=6)
    market_size: str = Field(description="Size statement; the number also goes in claims.")
    trends: list[str] = Field(default_factory=list, max_length=6)
    competitors: list[Competitor] = Field(default_factory=list, max_length=8)
    switching_cost: Literal["low", "medium", "high"] = "medium"
    switching_cost_note: str = ""


class MarketContextOutput(StageOutput):
    payload: MarketContext


SPEC = StageSpec(
    2,
    "market-context",
    Phase.WHY,
    "Market context",
    MarketContextOutput,
    needs=("idea-analysis",),
    tools=("web_search",),
)
