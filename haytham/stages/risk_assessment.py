"""Stage 3 — risk-assessment (WHY): claims with origin and support, risks with mitigations.

The overall risk level is computed here by code (:func:`risk_level`), never read from prose.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, computed_field

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.schemas.ids import Refs
from haytham.stages.base import Phase, StageSpec, StageView
from haytham.stages.market_context import cite_competitors

Level = Literal["low", "medium", "high"]


class AssessedClaim(TolerantModel):
    """A claim the idea rests on: whose it is, how much depends on it and how well it is
    supported."""

    statement: str
    origin: Literal["founder", "inferred"] = Field(
        description="founder only if the idea text states it."
    )
    severity: Level = Field(description="How much the idea depends on this claim.")
    support: Literal["supported", "partial", "unsupported"]
    note: str = ""


class Risk(TolerantModel):
    """A risk to the idea with its likelihood, impact, mitigation and the competitors behind it."""

    risk: str
    likelihood: Level = "medium"
    impact: Level = "medium"
    mitigation: str = ""
    competitors: Refs = Field(
        default_factory=list, description="Ids (COMP-nn) of the competitors behind this risk."
    )


def risk_level(claims: list[AssessedClaim], risks: list[Risk]) -> Level:
    """The documented rule.

    high   — any high-severity claim is unsupported, or two or more risks are high/high;
    medium — any high-severity claim is only partially supported, any medium-severity claim is
             unsupported, or any risk has high likelihood or high impact;
    low    — otherwise.
    """
    high_high = sum(1 for r in risks if r.likelihood == "high" and r.impact == "high")
    if high_high >= 2 or any(c.severity == "high" and c.support == "unsupported" for c in claims):
        return "high"
    if (
        any(c.severity == "high" and c.support == "partial" for c in claims)
        or any(c.severity == "medium" and c.support == "unsupported" for c in claims)
        or any("high" in (r.likelihood, r.impact) for r in risks)
    ):
        return "medium"
    return "low"


class RiskAssessment(TolerantModel):
    """Stage 3's payload: the assessed claims and risks; the overall level is derived by code."""

    claims: list[AssessedClaim] = Field(min_length=1, max_length=10)
    risks: list[Risk] = Field(min_length=1, max_length=10)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def risk_level(self) -> Level:
        """The overall risk level by :func:`risk_level`'s rule, never read from prose."""
        return risk_level(self.claims, self.risks)


class RiskAssessmentOutput(StageOutput):
    """Stage 3's answer: the shared envelope with a RiskAssessment payload."""

    payload: RiskAssessment


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Relink each risk's competitor citations to the market map's ids, adding those its own
    words name (see :func:`~haytham.stages.market_context.cite_competitors`)."""
    for r in output.payload.risks:
        r.competitors = cite_competitors(r.competitors, view, f"{r.risk} {r.mitigation}")
    return output


SPEC = StageSpec(
    3,
    "risk-assessment",
    Phase.WHY,
    "Risk assessment",
    RiskAssessmentOutput,
    needs=("idea-analysis", "market-context"),
    finalize=finalize,
)
