"""Stage 10 — story-generation (STORIES): ordered, traceable stories bounded by the appetite.

The order is a topological sort by ``depends_on`` (ties by id), computed by code; cycles are
reported. The story count is checked against :data:`APPETITE_BOUNDS` after generation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput, Traceable
from haytham.stages.base import Phase, StageSpec, StageView

APPETITE_BOUNDS = {"small": 8, "medium": 15, "large": 25}


class Story(Traceable):
    id: str = Field(pattern=r"^STORY-\d{3}$", description="STORY-001, …")
    title: str
    description: str = ""
    component: str = Field(description="The part of the system, e.g. web-app, api, admin.")
    layer: Literal["frontend", "backend", "data", "infra", "integration"]
    implements: list[str] = Field(min_length=1, description="CAP and DEC ids it implements.")
    depends_on: list[str] = Field(default_factory=list, description="STORY ids.")
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
    stories: list[Story] = Field(min_length=1, max_length=40)
    order: SkipJsonSchema[list[str]] = Field(default_factory=list)  # computed
    cycles: SkipJsonSchema[list[list[str]]] = Field(default_factory=list)  # computed
    appetite: SkipJsonSchema[str | None] = None  # the bound applied


class StoryGenerationOutput(StageOutput):
    payload: StoryGeneration


def effective_appetite(view: StageView) -> str:
    scope = view.payload("mvp-scope")
    return view.appetite or (scope.appetite if scope is not None else "medium")


def finalize(output: StageOutput, view: StageView) -> StageOutput:
    order, cycles = dependency_order(output.payload.stories)
    payload = output.payload.model_copy(
        update={"order": order, "cycles": cycles, "appetite": effective_appetite(view)}
    )
    return output.model_copy(update={"payload": payload})


def check(output: StageOutput, view: StageView) -> list[str]:
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
    return problems


SPEC = StageSpec(
    10,
    "story-generation",
    Phase.STORIES,
    "Story generation",
    StoryGenerationOutput,
    needs=("mvp-scope", "capability-model", "system-traits", "architecture-decisions"),
    finalize=finalize,
    check=check,
)
