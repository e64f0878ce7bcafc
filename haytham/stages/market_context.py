"""Stage 2 — market-context (WHY): jobs-to-be-done, market size, trends, and the competitor map.

Competitors are data (``COMP-nn`` ids, the job each does for whom, pricing evidence and where it
comes from, the cost of switching away, the gap the idea exploits) that risk-assessment and
validation-summary cite by id; code numbers them and relinks those citations.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import Source, StageOutput, shown_source
from haytham.schemas.ids import IdScheme, id_pattern, relink, renumber
from haytham.stages.base import Phase, StageSpec, StageView

COMPETITOR_IDS = IdScheme("COMP-", 2)
NOT_STATED = "not stated: the market analysis left it empty"
"""What a competitor row shows where the model gave no job or gap (claim_consistency reports it)."""
Level = Literal["low", "medium", "high"]


class Competitor(TolerantModel):
    """One alternative the idea's users have today: the job it does, its pricing and where that
    comes from, the cost of leaving it and the gap the idea uses."""

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
    def job_shown(self) -> str:
        """The job it does, for whom, or why the row has none."""
        return self.job.strip() or NOT_STATED

    @property
    def gap_shown(self) -> str:
        """The gap this idea uses, or why the row has none."""
        return self.gap.strip() or NOT_STATED

    @property
    def shown_pricing_source(self) -> str:
        """Where the pricing comes from in words, saying when code downgraded it."""
        return shown_source(self.pricing_source, self.claimed_pricing_source)


class MarketContext(TolerantModel):
    """Stage 2's payload: jobs to be done, market size, trends and the competitor map."""

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
    """Stage 2's answer: the shared envelope with a MarketContext payload."""

    payload: MarketContext


_ALIAS_MIN = 4  # a shorter name ("Pi") matches too many words
_COMP_ID = re.compile(r"\bCOMP[\s_-]*0*(\d{1,3})\b", re.IGNORECASE)


def aliases(name: str) -> list[str]:
    """The ways a text may name a competitor: its name, the name before a parenthesis or a
    comma, and each name listed in its parenthesis ("Generic video call (Zoom, Google Meet)"
    → Zoom, Google Meet; "e.g." dropped)."""
    out = [name, re.split(r"[(,]", name, maxsplit=1)[0]]
    for inner in re.findall(r"\(([^)]*)\)", name):
        out += [re.sub(r"^\s*(?:e\.g\.|eg|such as|like)\s*", "", p) for p in inner.split(",")]
    cleaned = [" ".join(a.split()).strip(" .;:") for a in out]
    return list(dict.fromkeys(a for a in cleaned if len(a) >= _ALIAS_MIN))


def mentioned_competitors(text: str, market: MarketContext | None) -> list[str]:
    """Ids of the competitors ``text`` names, by id (``COMP-3``) or by name, in map order."""
    if market is None or not text.strip():
        return []
    numbers = {int(n) for n in _COMP_ID.findall(text)}
    found = []
    for c in market.competitors:
        by_id = COMPETITOR_IDS.number(c.id) in numbers
        by_name = any(
            re.search(rf"(?<!\w){re.escape(a)}(?!\w)", text, re.IGNORECASE) for a in aliases(c.name)
        )
        if by_id or by_name:
            found.append(c.id)
    return found


def cite_competitors(refs: list[str], view: StageView, text: str = "") -> list[str]:
    """``refs`` as the market's competitor ids (by id, spelling or name), plus the competitors
    ``text`` (the item's own words) names, for the later stages of the WHY phase: code relinks
    what the model named to the map's ids. A citation that names no competitor on the map is
    dropped: it is optional metadata, and a weak model's stray citation is no reason to ask
    again (a risk that speaks of competition and cites none is claim_consistency's finding)."""
    market = view.payload(SPEC.slug)
    known = market.catalog() if market else {}
    cited = [r for r in relink(refs, known, (COMPETITOR_IDS,)) if r in known]
    return list(dict.fromkeys([*cited, *mentioned_competitors(text, market)]))


SPEC = StageSpec(
    2,
    "market-context",
    Phase.WHY,
    "Market context",
    MarketContextOutput,
    needs=("idea-analysis",),
    tools=("web_search",),
)
