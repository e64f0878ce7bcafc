"""Stage 10 — story-generation (STORIES): ordered, traceable stories bounded by the appetite.

The order is a topological sort by ``depends_on`` (ties by id), computed by code; cycles are
reported. The story count is checked against :data:`APPETITE_BOUNDS` after generation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import Assuming, StageOutput
from haytham.schemas.ids import IdScheme, Refs, id_pattern, relink, renumber
from haytham.stages.architecture_decisions import DECISION_IDS, Decision
from haytham.stages.base import ItemSource, Phase, StageSpec, StageView
from haytham.stages.capability_model import CAPABILITY_IDS, Capability
from haytham.stages.mvp_scope import APPETITES, DEFAULT_APPETITE

APPETITE_BOUNDS = {name: size.max_stories for name, size in APPETITES.items()}
"""The most stories each appetite allows (from mvp-scope's :data:`APPETITES` table)."""
STORY_IDS = IdScheme("STORY-", 3)


class Story(Assuming):
    """One implementable story: its layer and component, the CAP and DEC ids it implements, the
    stories it depends on and how it is accepted."""

    id: str = Field(
        default="",
        description="STORY-001, … (unique; code renumbers repeats)",
        json_schema_extra={"pattern": id_pattern(STORY_IDS.prefix, STORY_IDS.width)},
    )
    title: str
    description: str = ""
    component: str = Field(
        default="",
        description="The part of the system, e.g. web-app, api, admin (default: the layer).",
    )
    layer: Literal["frontend", "backend", "data", "infra", "integration"]
    implements: Refs = Field(min_length=1, description="CAP and DEC ids it implements.")
    depends_on: Refs = Field(default_factory=list, description="STORY ids.")
    acceptance_criteria: list[str] = Field(default_factory=list, max_length=6)
    technologies: list[str] = Field(default_factory=list, max_length=6)
    requires: list[str] = Field(default_factory=list, description="Trait tags relied on.")


def dependency_order(stories: list[Story]) -> tuple[list[str], list[list[str]]]:
    """Kahn's algorithm, smallest id first; returns (order, cycles). Unknown deps are ignored."""
    ids = sorted(s.id for s in stories)
    deps = {s.id: {d for d in s.depends_on if d in ids and d != s.id} for s in stories}
    order: list[str] = []
    ready = sorted(i for i in ids if not deps[i])
    remaining = {i: set(d) for i, d in deps.items()}
    while ready:
        current = ready.pop(0)
        order.append(current)
        for other in ids:
            if current in remaining[other]:
                remaining[other].discard(current)
                if not remaining[other] and other not in order and other not in ready:
                    ready.append(other)
                    ready.sort()
    stuck = [i for i in ids if i not in order]
    return order + stuck, _cycles(stuck, remaining)


def _cycles(stuck: list[str], pending: dict[str, set[str]]) -> list[list[str]]:
    """Cycles among the stories that could not be ordered (following only unmet deps)."""
    cycles: list[list[str]] = []
    seen: set[str] = set()
    for start in stuck:
        path, node = [], start
        while node not in path and pending.get(node):
            path.append(node)
            node = sorted(pending[node])[0]
        if node in path:
            cycle = path[path.index(node) :]
            if not seen & set(cycle):
                cycles.append(cycle)
                seen |= set(cycle)
    return cycles


class StoryGeneration(TolerantModel):
    """Stage 10's payload: the stories, with their dependency order, cycles and the appetite
    bound applied (all three computed by code)."""

    stories: list[Story] = Field(min_length=1, max_length=40)
    order: SkipJsonSchema[list[str]] = Field(default_factory=list)  # computed
    cycles: SkipJsonSchema[list[list[str]]] = Field(default_factory=list)  # computed
    appetite: SkipJsonSchema[str | None] = None  # the bound applied

    @model_validator(mode="after")
    def _number(self) -> StoryGeneration:
        """Unique story ids; dependencies follow a renamed id only where the spelling was
        unambiguous (a repeated id keeps pointing at its first story)."""
        written = [s.id for s in self.stories]
        renumber(self.stories, STORY_IDS)
        first: dict[str, str] = {}
        for raw, final in zip(written, (s.id for s in self.stories), strict=True):
            first.setdefault(str(raw), final)
        known = {s.id: s.title for s in self.stories}
        for s in self.stories:
            s.depends_on = relink([first.get(d, d) for d in s.depends_on], known, (STORY_IDS,))
        return self


class StoryGenerationOutput(StageOutput):
    """Stage 10's answer: the shared envelope with a StoryGeneration payload."""

    payload: StoryGeneration


def effective_appetite(view: StageView) -> str:
    """The appetite that bounds the stories: the founder's choice, else mvp-scope's, else
    :data:`~haytham.stages.mvp_scope.DEFAULT_APPETITE`."""
    scope = view.payload("mvp-scope")
    return view.appetite or (scope.appetite if scope is not None else DEFAULT_APPETITE)


def _implementable(view: StageView) -> dict[str, str]:
    """The CAP and DEC ids a story may implement (id → name)."""
    known: dict[str, str] = {}
    for slug in ("capability-model", "architecture-decisions"):
        earlier = view.payload(slug)
        if earlier is not None:
            known |= earlier.catalog()
    return known


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    """Relink what each story implements to the CAP and DEC ids, default its component to its
    layer, then record the dependency order, the cycles and the appetite applied."""
    known = _implementable(view)
    for s in output.payload.stories:
        if known:
            s.implements = relink(s.implements, known, (*CAPABILITY_IDS, DECISION_IDS))
        if not s.component.strip():
            s.component = s.layer
    order, cycles = dependency_order(output.payload.stories)
    payload = output.payload.model_copy(
        update={"order": order, "cycles": cycles, "appetite": effective_appetite(view)}
    )
    return output.model_copy(update={"payload": payload})


def check(output: StageOutput, view: StageView) -> list[str]:
    """More stories than the appetite allows, dependency cycles and references to ids that
    name nothing each earn one re-ask."""
    appetite = effective_appetite(view)
    bound = APPETITE_BOUNDS[appetite]
    problems = []
    count = len(output.payload.stories)
    if count > bound:
        problems.append(
            f"{count} stories exceed the appetite bound of {bound} for a {appetite} appetite; "
            f"merge or drop stories until there are at most {bound}"
        )
    for cycle in output.payload.cycles:
        problems.append(f"dependency cycle: {' -> '.join(cycle + cycle[:1])}")
    known = _implementable(view)
    story_ids = {s.id for s in output.payload.stories}
    for s in output.payload.stories:
        unknown = [r for r in s.implements if known and r not in known]
        unknown += [d for d in s.depends_on if d not in story_ids]
        if unknown:
            problems.append(
                f"{s.id} references ids that name nothing: {unknown} (valid: the CAP and DEC "
                "ids listed under 'Ids you may reference', and this answer's STORY ids)"
            )
    return problems


def appetite_bound(view: StageView) -> int:
    """The most stories this session may have (its prompt says so before the count is checked)."""
    return APPETITE_BOUNDS[effective_appetite(view)]


SPEC = StageSpec(
    10,
    "story-generation",
    Phase.STORIES,
    "Story generation",
    StoryGenerationOutput,
    needs=("mvp-scope", "capability-model", "system-traits", "architecture-decisions"),
    finalize=finalize,
    check=check,
    items=(("stories", False),),
    receives=(
        ItemSource("capability-model", "functional", Capability, "functional capability"),
        ItemSource("architecture-decisions", "decisions", Decision, "architecture decision"),
    ),
    verified_with=("capability-model", "architecture-decisions", "system-traits"),
    bound=appetite_bound,
)
