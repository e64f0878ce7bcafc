"""Stage 6 — capability-model (WHAT): functional CAP-F-nnn and non-functional CAP-NF-nnn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import Assuming, StageOutput
from haytham.schemas.ids import IdScheme, Refs, id_pattern, relink, renumber
from haytham.stages.base import ItemSource, Phase, StageSpec, StageView
from haytham.stages.mvp_scope import SCOPE_IDS, ScopeItem

FUNCTIONAL_IDS = IdScheme("CAP-F-", 3)
NON_FUNCTIONAL_IDS = IdScheme("CAP-NF-", 3)
CAPABILITY_IDS = (FUNCTIONAL_IDS, NON_FUNCTIONAL_IDS)


class Capability(Assuming):
    """A functional capability (CAP-F-nnn): what the product does, the IN-scope items it
    serves and how it is accepted."""

    id: str = Field(
        default="",
        description="CAP-F-001, … (unique; code renumbers repeats)",
        json_schema_extra={"pattern": id_pattern(FUNCTIONAL_IDS.prefix, FUNCTIONAL_IDS.width)},
    )
    name: str
    description: str = ""
    serves_scope: Refs = Field(min_length=1, description="SCOPE-n ids it delivers.")
    user_flow: str = ""
    acceptance_criteria: list[str] = Field(default_factory=list, max_length=6)


class NonFunctional(Assuming):
    """A non-functional capability (CAP-NF-nnn): a quality the product keeps, by category."""

    id: str = Field(
        default="",
        description="CAP-NF-001, … (unique; code renumbers repeats)",
        json_schema_extra={
            "pattern": id_pattern(NON_FUNCTIONAL_IDS.prefix, NON_FUNCTIONAL_IDS.width)
        },
    )
    name: str
    description: str = ""
    category: str = Field(default="other", description="privacy, performance, availability, …")


class CapabilityModel(TolerantModel):
    """Stage 6's payload: the functional and non-functional capabilities, numbered by code."""

    functional: list[Capability] = Field(min_length=1, max_length=15)
    non_functional: list[NonFunctional] = Field(default_factory=list, max_length=8)

    @model_validator(mode="after")
    def _number(self) -> CapabilityModel:
        renumber(self.functional, FUNCTIONAL_IDS)
        renumber(self.non_functional, NON_FUNCTIONAL_IDS)
        return self

    def ids(self) -> set[str]:
        """Every capability id, functional and non-functional."""
        return {c.id for c in self.functional} | {c.id for c in self.non_functional}

    def catalog(self) -> dict[str, str]:
        """The ids later stages may reference, with their names."""
        functional = {c.id: c.name for c in self.functional}
        return functional | {c.id: c.name for c in self.non_functional}


class CapabilityModelOutput(StageOutput):
    """Stage 6's answer: the shared envelope with a CapabilityModel payload."""

    payload: CapabilityModel


def relink_to_capabilities(items: Sequence[Any], field: str, view: StageView) -> None:
    """Spell each item's ``field`` references as capability-model's ids, in place."""
    caps = view.payload("capability-model")
    if caps is None:
        return
    known = caps.catalog()
    for item in items:
        setattr(item, field, relink(getattr(item, field), known, CAPABILITY_IDS))


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Scope references spelled as mvp-scope's ids (``scope 2``, a title → ``SCOPE-2``)."""
    scope = view.payload("mvp-scope")
    if scope is not None:
        known = scope.catalog()
        for c in output.payload.functional:
            c.serves_scope = relink(c.serves_scope, known, (SCOPE_IDS,))
    return output


def check(output: StageOutput, view: StageView) -> list[str]:
    """Capabilities that serve unknown scope items, and IN-scope items no capability serves,
    each earn one re-ask."""
    scope = view.payload("mvp-scope")
    if scope is None:
        return []
    known = scope.scope_ids()
    problems = [
        f"{c.id} serves unknown scope items {', '.join(sorted(set(c.serves_scope) - known))} "
        f"(IN-scope ids are {', '.join(sorted(known))})"
        for c in output.payload.functional
        if set(c.serves_scope) - known
    ]
    served = {s for c in output.payload.functional for s in c.serves_scope}
    unserved = sorted(known - served)
    if unserved:
        titles = scope.catalog()
        named = ", ".join(f"{i} “{titles[i]}”" for i in unserved)
        problems.append(f"IN-scope items no capability serves: {named}")
    return problems


SPEC = StageSpec(
    6,
    "capability-model",
    Phase.WHAT,
    "Capability model",
    CapabilityModelOutput,
    needs=("mvp-scope",),
    finalize=finalize,
    check=check,
    items=(("functional", False), ("non_functional", False)),
    receives=(ItemSource("mvp-scope", "in_scope", ScopeItem, "scope item"),),
)
