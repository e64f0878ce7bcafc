"""Stage 4 — validation-summary (WHY): scorecard and a GO / NO-GO / PIVOT verdict.

The model fills the scorecard; the verdict is computed by :func:`verdict` from the scorecard and
the risk level of stage 3. Text in the idea or the model's prose cannot change it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.schemas.ids import Refs
from haytham.stages.base import Phase, StageSpec, StageView
from haytham.stages.market_context import cite_competitors

Verdict = Literal["GO", "NO-GO", "PIVOT"]


class Knockout(TolerantModel):
    """A criterion the idea must pass at all (one failure makes the verdict NO-GO), with the
    evidence."""

    criterion: str
    passed: bool
    evidence: str = ""


class Dimension(TolerantModel):
    """One scorecard dimension scored 1-5, with its evidence and the competitors it weighs."""

    name: str
    score: int = Field(ge=1, le=5)
    evidence: str = ""
    competitors: Refs = Field(
        default_factory=list, description="Ids (COMP-nn) of competitors this score weighs."
    )


def verdict(
    knockouts: list[Knockout], dimensions: list[Dimension], risk: str
) -> tuple[Verdict, str]:
    """The documented rule, in order:

    1. any knockout criterion failed                       → NO-GO
    2. mean dimension score < 2.5                          → NO-GO
    3. mean ≥ 3.5 and risk level is not high               → GO
    4. otherwise (middling score, or good score at high risk) → PIVOT
    """
    failed = [k.criterion for k in knockouts if not k.passed]
    if failed:
        return "NO-GO", f"knockout criteria failed: {', '.join(failed)}"
    mean = sum(d.score for d in dimensions) / len(dimensions)
    if mean < 2.5:
        return "NO-GO", f"mean score {mean:.2f} < 2.5"
    if mean >= 3.5 and risk != "high":
        return "GO", f"mean score {mean:.2f} ≥ 3.5 and risk {risk}"
    return "PIVOT", f"mean score {mean:.2f} with risk {risk}"


class ValidationSummary(TolerantModel):
    """Stage 4's payload: the scorecard and summary the model writes, and the verdict code
    derives from them."""

    knockout_criteria: list[Knockout] = Field(min_length=1, max_length=6)
    dimensions: list[Dimension] = Field(min_length=1, max_length=8)
    executive_summary: str
    next_steps: list[str] = Field(default_factory=list, max_length=6)
    pivot_options: list[str] = Field(default_factory=list, max_length=4)
    # Derived by code in finalize(); hidden from the model's schema and overwritten if sent.
    risk_level: SkipJsonSchema[str | None] = None
    verdict: SkipJsonSchema[Verdict | None] = None
    verdict_reason: SkipJsonSchema[str | None] = None


class ValidationSummaryOutput(StageOutput):
    """Stage 4's answer: the shared envelope with a ValidationSummary payload."""

    payload: ValidationSummary


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Relink the dimensions' competitor citations, then set the risk level (stage 3's, or
    medium without it), the verdict and its reason by :func:`verdict`."""
    risk = view.payload("risk-assessment")
    level = risk.risk_level if risk is not None else "medium"
    p: ValidationSummary = output.payload
    for d in p.dimensions:
        d.competitors = cite_competitors(d.competitors, view, f"{d.name} {d.evidence}")
    decided, reason = verdict(p.knockout_criteria, p.dimensions, level)
    payload = p.model_copy(
        update={"risk_level": level, "verdict": decided, "verdict_reason": reason}
    )
    return output.model_copy(update={"payload": payload})


def check(output: StageOutput, view: StageView) -> list[str]:
    """A PIVOT verdict without pivot options earns one re-ask."""
    p: ValidationSummary = output.payload
    if p.verdict == "PIVOT" and not p.pivot_options:
        return ["the verdict is PIVOT, so pivot_options must list 1-4 concrete pivots"]
    return []


def blocker(payload: ValidationSummary) -> tuple[str, str] | None:
    """A NO-GO verdict blocks Gate 1 until the reviewer overrides it (or rejects)."""
    if payload.verdict != "NO-GO":
        return None
    return "verdict:NO-GO", f"Verdict NO-GO ({payload.verdict_reason or ''})"


SPEC = StageSpec(
    4,
    "validation-summary",
    Phase.WHY,
    "Validation summary",
    ValidationSummaryOutput,
    needs=("market-context", "risk-assessment"),
    finalize=finalize,
    check=check,
    blocker=blocker,
)
