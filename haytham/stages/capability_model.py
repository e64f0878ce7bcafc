"""Stage 6 — capability-model (WHAT): functional CAP-F-nnn and non-functional CAP-NF-nnn."""

from __future__ import annotations

from pydantic import Field, model_validator

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput, Traceable
from haytham.stages.base import Phase, StageSpec, StageView


class Capability(Traceable):
    id: str = Field(pattern=r"^CAP-F-\d{3}$", description="CAP-F-001, …")
    name: str
    description: str = ""
    serves_scope: list[str] = Field(min_length=1, description="SCOPE-n ids it delivers.")
    user_flow: str = ""
    acceptance_criteria: list[str] = Field(default_factory=list, max_length=6)


class NonFunctional(Traceable):
    id: str = Field(pattern=r"^CAP-NF-\d{3}$", description="CAP-NF-001, …")
    name: str
    description: str = ""
    category: str = Field(default="other", description="privacy, performance, availability, …")


class CapabilityModel(TolerantModel):
    functional: list[Capability] = Field(min_length=1, max_length=15)
    non_functional: list[NonFunctional] = Field(default_factory=list, max_length=8)

    @model_validator(mode="after")
    def _unique_ids(self) -> CapabilityModel:
        ids = self.ids()
        if len(ids) != len(self.functional) + len(self.non_functional):
            raise ValueError("capability ids must be unique")
        return self

    def ids(self) -> set[str]:
        return {c.id for c in self.functional} | {c.id for c in self.non_functional}


class CapabilityModelOutput(StageOutput):
    payload: CapabilityModel


def check(output: StageOutput, view: StageView) -> list[str]:
    scope = view.payload("mvp-scope")
    if scope is None:
        return []
    known = scope.scope_ids()
    problems = [
        f"{c.id} serves unknown scope items {sorted(set(c.serves_scope) - known)} "
        f"(IN-scope ids are {sorted(known)})"
        for c in output.payload.functional
        if set(c.serves_scope) - known
    ]
    served = {s for c in output.payload.functional for s in c.serves_scope}
    unserved = sorted(known - served)
    if unserved:
        problems.append(f"IN-scope items no capability serves: {unserved}")
    return problems


SPEC = StageSpec(
    6,
    "capability-model",
    Phase.WHAT,
    "Capability model",
    CapabilityModelOutput,
    needs=("mvp-scope",),
    check=check,
)
