"""Stage 2 — market-context (WHY): jobs-to-be-done, market size, trends, and the competitor map.

Competitors are data (``COMP-nn`` ids, the job each does for whom, pricing evidence and where it
comes from, the cost of switching away, the gap the idea exploits) that risk-assessment and
validation-summary cite by id; code numbers them and relinks those citations.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import Source, StageOutput, shown_source
from haytham.schemas.ids import IdScheme, id_pattern, relink, renumber
from haytham.stages.base import Phase, StageSpec, StageView

COMPETITOR_IDS = IdScheme("COMP-", 2)
Level = Literal["low", "medium", "high"]


class Competitor(TolerantModel):
    id: str = Field(
        default="",
        description="COMP-01, … (unique; code renumbers repeats)",
        json_schema_extra={"pattern": id_pattern(COMPETITOR_IDS.prefix, COMPETITOR_IDS.width)},
    )
    name: str
    job: str = Field(default="", description="The job it does today, and for whom.")
    jtbd_match: Literal["direct", "adjacent", "unrelated"] = Field(
        description="How closely it serves the same job-to-be-done."
    )
    pricing_evidence: str = ""
    pricing_source: Source = Field(
        default="unsourced",
        description="web_search only when a search tool result shows the price.",
    )
    # Set by code only (haytham.validate.claims.downgrade_unsourced): the label the stage gave
    # when no logged search shows the price; ``pricing_source`` is then ``unsourced``.
    claimed_pricing_source: SkipJsonSchema[Source | None] = Field(
        default=None, exclude_if=lambda v: v is None
    )
    switching_cost: Level = Field(
        default="medium", description="For the idea's users, leaving this alternative."
    )
    gap: str = Field(default="", description="What it leaves undone that this idea does.")

    @property
    def shown_pricing_source(self) -> str:
        """Where the pricing comes from in words, saying when code downgraded it."""
        return shown_source(self.pricing_source, self.claimed_pricing_source)


class MarketContext(TolerantModel):
    jobs_to_be_done: list[str] = Field(min_length=1, max_length=6)
    market_size: str = Field(description="Size statement; the number also goes in claims.")
    trends: list[str] = Field(default_factory=list, max_length=6)
    competitors: list[Competitor] = Field(default_factory=list, max_length=8)
    switching_cost: Level = "medium"
    switching_cost_note: str = ""

    @model_validator(mode="after")
    def _number(self) -> MarketContext:
        renumber(self.competitors, COMPETITOR_IDS)
        return self

    def catalog(self) -> dict[str, str]:
        """The competitors later stages may cite (id → name)."""
        return {c.id: c.name for c in self.competitors}


class MarketContextOutput(StageOutput):
    payload: MarketContext


def cite_competitors(refs: list[str], view: StageView) -> list[str]:
    """``refs`` as the market's competitor ids (by id, spelling or name), for the later stages
    of the WHY phase. A citation that names no competitor on the map is dropped: it is optional
    metadata, and a weak model's stray citation is no reason to ask again."""
    market = view.payload(SPEC.slug)
    known = market.catalog() if market else {}
    return [r for r in relink(refs, known, (COMPETITOR_IDS,)) if r in known]


SPEC = StageSpec(
    2,
    "market-context",
    Phase.WHY,
    "Market context",
    MarketContextOutput,
    needs=("idea-analysis",),
    tools=("web_search",),
)
