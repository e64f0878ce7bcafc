"""Stage 9 — architecture-decisions (HOW): DEC-<CAT>-nnn decisions; coverage computed by code."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput, Traceable
from haytham.schemas.ids import DecisionIds, Refs, renumber
from haytham.stages.base import Phase, StageSpec, StageView
from haytham.stages.capability_model import relink_to_capabilities

DECISION_IDS = DecisionIds()


class Decision(Traceable):
    """One architecture decision: what is decided for which component, the capabilities it
    serves, the alternatives weighed and the technologies it uses."""

    id: str = Field(
        default="",
        description="DEC-<CATEGORY>-nnn, e.g. DEC-AUTH-001 (unique; code renumbers repeats)",
        json_schema_extra={"pattern": r"^DEC-[A-Z0-9]+-\d{3}$"},
    )
    title: str
    component: str = Field(
        default="",
        description="The part of the system it applies to (same names as the stories use).",
    )
    decision: str
    serves: Refs = Field(min_length=1, description="CAP ids served.")
    alternatives: list[str] = Field(default_factory=list, max_length=4)
    rationale: str = ""
    technologies: list[str] = Field(default_factory=list, max_length=6)
    requires: list[str] = Field(default_factory=list, description="Trait tags relied on.")


class Coverage(TolerantModel):
    """Which functional capabilities some decision serves and which none does (computed)."""

    covered: list[str] = Field(default_factory=list)
    uncovered: list[str] = Field(default_factory=list)


class ArchitectureDecisions(TolerantModel):
    """Stage 9's payload: the decisions, numbered by code, and their coverage of the
    capabilities."""

    decisions: list[Decision] = Field(min_length=1, max_length=15)
    coverage: SkipJsonSchema[Coverage | None] = None  # computed in finalize()

    @model_validator(mode="after")
    def _number(self) -> ArchitectureDecisions:
        renumber(self.decisions, DECISION_IDS)
        return self

    def catalog(self) -> dict[str, str]:
        """The ids stories may reference, with their titles."""
        return {d.id: d.title for d in self.decisions}


class ArchitectureDecisionsOutput(StageOutput):
    """Stage 9's answer: the shared envelope with an ArchitectureDecisions payload."""

    payload: ArchitectureDecisions


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Relink what each decision serves to capability-model's ids, then compute which
    functional capabilities are covered."""
    relink_to_capabilities(output.payload.decisions, "serves", view)
    caps = view.payload("capability-model")
    ids = sorted(c.id for c in caps.functional) if caps is not None else []
    served = {s for d in output.payload.decisions for s in d.serves}
    coverage = Coverage(
        covered=[i for i in ids if i in served], uncovered=[i for i in ids if i not in served]
    )
    payload = output.payload.model_copy(update={"coverage": coverage})
    return output.model_copy(update={"payload": payload})


def check(output: StageOutput, view: StageView) -> list[str]:
    """Decisions serving unknown capabilities, and capabilities no decision serves, each earn
    one re-ask."""
    problems = []
    caps = view.payload("capability-model")
    if caps is not None:
        known = caps.ids()
        problems += [
            f"{d.id} serves unknown capabilities {', '.join(sorted(set(d.serves) - known))} "
            f"(capability ids are {', '.join(sorted(known))})"
            for d in output.payload.decisions
            if set(d.serves) - known
        ]
    cov = output.payload.coverage
    if cov is not None and cov.uncovered:
        names = caps.catalog() if caps is not None else {}
        named = ", ".join(f"{i} “{names[i]}”" if i in names else i for i in cov.uncovered)
        problems.append(f"capabilities with no decision serving them: {named}")
    return problems


SPEC = StageSpec(
    9,
    "architecture-decisions",
    Phase.HOW,
    "Architecture decisions",
    ArchitectureDecisionsOutput,
    needs=("capability-model", "system-traits", "build-buy-analysis"),
    finalize=finalize,
    check=check,
)
