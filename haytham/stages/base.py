"""What a stage is: its place in the pipeline, its output model and its deterministic code.

A stage module defines a payload model, an ``Output`` envelope subclass, optionally
``finalize`` (derive fields by code, e.g. the verdict) and ``check`` (mechanical problems that
earn one re-ask, e.g. too many stories), and one :class:`StageSpec`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib.resources import files
from pathlib import Path
from typing import Any

from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.stages.trace import resolve_refs

# prompts/ ships inside the package as haytham.prompts (pyproject's package-dir), so a wheel
# install finds it as well as a checkout does.
PROMPTS_DIR = Path(str(files("haytham.prompts")))


class Phase(StrEnum):
    """The four phases the stages fall in, in order; each ends at its own gate."""

    WHY = "WHY"
    WHAT = "WHAT"
    HOW = "HOW"
    STORIES = "STORIES"

    @property
    def gate(self) -> int:
        """The number of the gate that closes this phase (WHY → 1 … STORIES → 4)."""
        return list(Phase).index(self) + 1


@dataclass(frozen=True)
class StageView:
    """Read-only view of the session a stage's deterministic code may look at."""

    idea: str
    outputs: Mapping[str, StageOutput]
    anchor: ConceptAnchor | None = None
    appetite: str | None = None  # the founder's choice, if any

    def payload(self, slug: str) -> Any:
        """The payload of the earlier stage ``slug`` (its own model, so untyped here), or None
        when that stage has not run."""
        out = self.outputs.get(slug)
        return None if out is None else out.payload


Finalize = Callable[[StageOutput, StageView], StageOutput]
Check = Callable[[StageOutput, StageView], list[str]]
Blocker = Callable[[Any], "tuple[str, str] | None"]
"""From a stage's payload: ``(id, message)`` of what blocks its gate until overridden, or None."""
Bound = Callable[[StageView], int]
"""From the session: the most items the stage may produce (said in its prompt, then checked)."""


def _no_finalize(output: StageOutput, view: StageView) -> StageOutput:
    return output


def _no_check(output: StageOutput, view: StageView) -> list[str]:
    return []


@dataclass(frozen=True)
class ItemSource:
    """Items an earlier stage produced that this stage consumes and validates before it runs
    (receiving-stage validation, seed 000): ``outputs[producer].payload[field]``."""

    producer: str
    field: str
    model: type
    kind: str  # how the prompts name one item, e.g. "scope item"


@dataclass(frozen=True)
class StageSpec:
    """Everything about one stage that the graph, the runner and the checks read: its place,
    output model, model tier, inputs, deterministic code and what its gate and verifier need."""

    number: int
    slug: str
    phase: Phase
    title: str
    output_model: type[StageOutput]
    tier: str = "heavy"
    needs: tuple[str, ...] = ()  # earlier stages whose full payloads go into the prompt
    finalize: Finalize = field(default=_no_finalize)
    check: Check = field(default=_no_check)
    tools: tuple[str, ...] = ()  # tools the stage's agent may call (when configured)
    blocker: Blocker | None = None
    bound: Bound | None = None
    # payload lists of traceable items that describe the whole product at this stage's level,
    # as (field, out_of_scope); such a stage must evidence every invariant (descriptive)
    items: tuple[tuple[str, bool], ...] = ()
    receives: tuple[ItemSource, ...] = ()  # items validated before the stage runs
    # earlier, approved stages whose payloads the phase verifier reads beside this stage
    verified_with: tuple[str, ...] = ()

    @property
    def descriptive(self) -> bool:
        """Whether the stage describes the whole product, so it must evidence every invariant."""
        return bool(self.items)

    @property
    def action(self) -> str:
        """The stage's name as a Burr action (``idea_analysis``)."""
        return self.slug.replace("-", "_")

    @property
    def dir_name(self) -> str:
        """The stage's folder under a session's ``stages/`` (``01-idea-analysis``)."""
        return f"{self.number:02d}-{self.slug}"

    @property
    def prompt_path(self) -> Path:
        """The stage's prompt file in the packaged ``prompts/stages/``."""
        return PROMPTS_DIR / "stages" / f"{self.slug}.md"

    def prompt(self) -> str:
        """The stage's own prompt text (the runner appends the shared envelope rules)."""
        return self.prompt_path.read_text(encoding="utf-8")

    def complete(self, output: StageOutput, view: StageView) -> tuple[StageOutput, list[str]]:
        """What code does to every parsed answer: repair invariant references, derive fields
        (``finalize``), then list the mechanical problems that earn one re-ask (``check``)."""
        output, problems = resolve_refs(output, view.anchor)
        output = self.finalize(output, view)
        return output, problems + self.check(output, view)
