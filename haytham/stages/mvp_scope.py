"""Stage 5 — mvp-scope (WHAT): the one thing, appetite, IN/OUT scope items, core flows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import INVARIANT_REF, StageOutput, Traceable
from haytham.schemas.ids import IdScheme, as_refs, id_pattern, renumber
from haytham.stages.base import Phase, StageSpec, StageView


@dataclass(frozen=True)
class AppetiteSize:
    """What an appetite allows: the weeks a first version may take and its story bound."""

    weeks: str
    max_stories: int


APPETITES: Mapping[str, AppetiteSize] = MappingProxyType(
    {
        "small": AppetiteSize("1-2", 8),
        "medium": AppetiteSize("3-4", 15),
        "large": AppetiteSize("5-6", 25),
    }
)
"""The MVP appetites, smallest first: the one table of their names, sizes and story bounds.

The founder's choice (CLI, UI), this payload's field, story-generation's bound, the appetite
validator and the STORIES verifier read it; the prompts and docs say the same values in words
(``tests/test_validate_appetite.py`` checks that they agree)."""
DEFAULT_APPETITE = "medium"
"""The appetite whose bound applies when neither the founder nor mvp-scope chose one."""
Appetite = Literal["small", "medium", "large"]
"""The appetite names as a type (a type checker cannot read them from :data:`APPETITES`); the
import fails if the two ever disagree."""
if get_args(Appetite) != tuple(APPETITES):
    raise RuntimeError(f"Appetite {get_args(Appetite)} and APPETITES {tuple(APPETITES)} disagree")
SCOPE_IDS = IdScheme("SCOPE-")


class ScopeItem(Traceable):
    """A piece of the MVP, IN or OUT of scope, with the invariants it delivers or (OUT) honours."""

    id: str = Field(
        default="",
        description="SCOPE-1, SCOPE-2, … (unique; code renumbers repeats)",
        json_schema_extra={"pattern": id_pattern(SCOPE_IDS.prefix, SCOPE_IDS.width)},
    )
    title: str
    description: str = ""
    honours_exclusion: list[str] = Field(
        default_factory=list,
        description=(
            "OUT items only: ids of the invariants (INV-n) this exclusion honours, e.g. "
            "'Open registration: out' honours the closed-access invariant."
        ),
        json_schema_extra={"items": {"type": "string", "pattern": INVARIANT_REF}},
    )

    @field_validator("honours_exclusion", mode="before")
    @classmethod
    def _listify_honours(cls, v: object) -> object:
        return as_refs(v)


class UserFlow(TolerantModel):
    """A core path through the MVP, as the steps the primary user takes."""

    name: str
    steps: list[str] = Field(min_length=1, max_length=8)


class MvpScope(TolerantModel):
    """Stage 5's payload: the one thing, who it is for, the appetite, what is IN and OUT, how
    success shows and the core flows."""

    the_one_thing: str = Field(description="The single outcome the MVP must deliver.")
    primary_segment: str
    input_method: str = Field(description="How the primary user gets data/intent into the product.")
    appetite: Appetite
    in_scope: list[ScopeItem] = Field(min_length=1, max_length=12)
    out_of_scope: list[ScopeItem] = Field(default_factory=list, max_length=12)
    success_criteria: list[str] = Field(min_length=1, max_length=6)
    core_user_flows: list[UserFlow] = Field(min_length=1, max_length=3)

    @field_validator("appetite", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.strip().lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _number(self) -> MvpScope:
        renumber(self.in_scope + self.out_of_scope, SCOPE_IDS)
        return self

    def scope_ids(self) -> set[str]:
        """The ids of the IN-scope items (OUT items are not references later stages may use)."""
        return {i.id for i in self.in_scope}

    def catalog(self) -> dict[str, str]:
        """The ids later stages may reference (IN-scope items), with their titles."""
        return {i.id: i.title for i in self.in_scope}


class MvpScopeOutput(StageOutput):
    """Stage 5's answer: the shared envelope with an MvpScope payload."""

    payload: MvpScope


def check(output: StageOutput, view: StageView) -> list[str]:
    """A scope whose appetite differs from the founder's choice earns one re-ask."""
    p: MvpScope = output.payload
    if view.appetite and p.appetite != view.appetite:
        return [f"the founder chose appetite {view.appetite!r}; the scope says {p.appetite!r}"]
    return []


SPEC = StageSpec(
    5,
    "mvp-scope",
    Phase.WHAT,
    "MVP scope",
    MvpScopeOutput,
    needs=("idea-analysis", "validation-summary"),
    check=check,
    items=(("in_scope", False), ("out_of_scope", True)),
    verified_with=("validation-summary",),
)
