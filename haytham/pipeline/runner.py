"""Runs one stage (or the anchor extraction) as a Strands agent with structured output.

Contracts compose, cheapest first (seed 004): the pydantic schema at the tool boundary (one
repair turn, then a typed :class:`ContractViolation`), then the stage's deterministic code
(``finalize`` derives fields, ``check`` finds mechanical problems that earn exactly one re-ask),
then code rewrites what it checked (a ``web_search`` label no logged search backs is stored as
unsourced), then the post-validators. Every model call is accounted in ``events.jsonl``.

Where a stage consumes a list of items from an earlier stage, receiving-stage validation
(:mod:`haytham.verify.receiving`, switch ``HAYTHAM_INPUT_VALIDATION``) runs before it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from haytham.agents.caller import ModelCaller
from haytham.agents.context import (
    build_anchor_context,
    build_pin_context,
    build_stage_context,
)
from haytham.changes.impact import compute_impact, impact_lines
from haytham.config import Settings
from haytham.errors import ContractViolation, HaythamError, StageFailed
from haytham.models.factory import ModelRuntime
from haytham.schemas.anchor import ANCHOR_TOKEN_BUDGET, ConceptAnchor
from haytham.schemas.base import salvage
from haytham.schemas.envelope import StageOutput
from haytham.schemas.pins import (
    PIN_AGENT,
    TraitPins,
    apply_pins,
    ask_founder,
    pin_request,
    unpinned,
)
from haytham.schemas.verification import ReviewArtifact
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, StageSpec, StageView
from haytham.stages.base import PROMPTS_DIR
from haytham.state import SessionState
from haytham.storage.protocol import Session
from haytham.validate.claims import downgrade_unsourced
from haytham.validate.grounding import ground_anchor
from haytham.validate.model import Finding
from haytham.verify.receiving import InputValidation, Received, input_validation_enabled

MAX_ANCHOR_TIGHTENING = 2


class PostValidator(Protocol):
    """The validators run after each stage (:class:`haytham.app.PostValidation`)."""

    def __call__(
        self, slug: str, state: SessionState, tool_calls: Sequence[Mapping[str, Any]]
    ) -> tuple[list[Finding], dict[str, float]]:
        """(findings, {"idea": sim, "anchor": sim}) for the stage that just ran."""
        ...

    def start_loading(self) -> None:
        """Start loading what the validators need, in the background."""
        ...


def load_prompt(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


def stage_system_prompt(spec: StageSpec) -> str:
    return spec.prompt().rstrip() + "\n\n" + load_prompt("shared/envelope_rules.md")


def view_of(state: SessionState) -> StageView:
    """What a stage's deterministic code may read of the session."""
    return StageView(
        idea=state.idea, outputs=state.outputs, anchor=state.anchor, appetite=state.appetite
    )


def valid_ids(spec: StageSpec, view: StageView) -> dict[str, dict[str, str]]:
    """The ids this stage may reference, by the earlier stage that defines them (id → title)."""
    out: dict[str, dict[str, str]] = {}
    for slug in spec.needs:
        payload = view.payload(slug)
        catalog = getattr(payload, "catalog", None)
        if callable(catalog):
            out[slug] = catalog()
    return out


def render_review(art: ReviewArtifact) -> str:
    lines = [f"Verdict: {art.verdict} (from the {art.source}, round {art.round})"]
    lines += [f"- [{i.severity}] {i.stage}: {i.detail}" for i in art.issues]
    lines += [f"- suggestion: {s}" for s in art.suggestions]
    return "\n".join(lines)


@dataclass
class StageResult:
    """One stage run: its output, what its checks left open, the validators' findings, how
    similar it is to the idea and the anchor, and the inputs receiving validation revised."""

    output: StageOutput
    problems: list[str] = field(default_factory=list)
    divergence: dict[str, float] = field(default_factory=dict)  # similarity to idea / anchor
    attempts: int = 1
    findings: list[Finding] = field(default_factory=list)
    # receiving-stage validation: producers' outputs it revised, and the boundary's counters
    inputs: dict[str, StageOutput] = field(default_factory=dict)
    quality_flags: dict[str, int] | None = None


class StageRunner:
    """Everything a stage needs at run time; one per session per process (no globals)."""

    def __init__(
        self,
        settings: Settings,
        models: ModelRuntime,
        files: Session,
        post_validator: PostValidator | None = None,
        *,
        input_validation: bool | None = None,
        on_progress: Callable[[str, int | None], None] | None = None,
        on_text: Callable[[str, str], None] | None = None,
    ) -> None:
        """``input_validation`` (receiving-stage validation, seed 000) defaults to
        ``HAYTHAM_INPUT_VALIDATION`` (on unless ``off``). ``on_progress(row, tokens)`` hears the
        output tokens of a call while it streams, and ``(row, None)`` when it returns."""
        self.settings = settings
        self.caller = ModelCaller(settings, models, files, on_progress=on_progress, on_text=on_text)
        self.models = models
        self.files = files
        self.post_validator = post_validator
        enabled = (
            input_validation_enabled(settings) if input_validation is None else input_validation
        )
        self.receiver = InputValidation(files, self.caller.ask) if enabled else None

    # -- stages -------------------------------------------------------------------------------
    def run_stage(
        self, spec: StageSpec, state: SessionState, received: Received | None = None
    ) -> StageResult:
        """Run ``spec`` on ``state``. ``received`` is what receiving-stage validation (the step
        before, in :func:`haytham.pipeline.actions.run_stage`) revised of its inputs."""
        if received is not None:
            state = state.model_copy(update={"outputs": received.outputs})
        view = view_of(state)
        review = state.reviews.get(spec.slug)
        bound = spec.bound(view) if spec.bound else None
        system = stage_system_prompt(spec)
        started = time.perf_counter()
        self.files.append_event("stage_started", spec.slug, rework=review is not None)
        problems: list[str] = []
        try:
            for attempt in (1, 2):
                ctx = build_stage_context(
                    spec,
                    idea=state.idea,
                    anchor_text=state.anchor_text,
                    outputs=state.outputs,
                    appetite=view.appetite,
                    appetite_bound=bound,
                    feedback=render_review(review) if review else None,
                    problems=problems,
                    tools=[t.tool_name for t in self.caller.tools_for(spec)],
                    offers_tools=bool(spec.tools),
                    valid_ids=valid_ids(spec, view),
                )
                salvaged: list[str] = []
                try:
                    output = self.caller.ask(spec.slug, spec.tier, system, ctx, spec.output_model)
                except ContractViolation as exc:
                    output, salvaged = self._salvage(spec, exc)
                output, problems = spec.complete(output, view)
                problems = salvaged + problems
                if not problems:
                    break
                self.files.append_event(
                    "stage_check_failed", spec.slug, attempt=attempt, problems=problems
                )
                if salvaged:  # it already had its repair turn: the reviewer takes it from here
                    break
                if attempt == 1:
                    self.files.append_event("stage_reask", spec.slug, problems=problems)
        except ContractViolation as exc:
            self._failed(spec.slug, exc.to_dict())
            raise StageFailed(spec.slug, str(exc), cause=exc.to_dict()) from None
        except HaythamError as exc:
            self._failed(spec.slug, exc.to_dict())
            raise
        output = self._downgrade_unsourced(spec.slug, output)
        self._record_impact(spec.slug, state, output)
        findings, divergence = self._post_validate(spec.slug, state, output)
        flags = received.quality_flags if received is not None else None
        self.files.append_event(
            "stage_completed",
            spec.slug,
            attempts=attempt,
            wall_ms=round((time.perf_counter() - started) * 1000, 1),
            status="needs_attention" if problems else "completed",
            problems=problems,
            **({"quality_flags": flags} if flags is not None else {}),
        )
        return StageResult(
            output=output,
            problems=problems,
            attempts=attempt,
            findings=findings,
            divergence=divergence,
            inputs=received.changed if received is not None else {},
            quality_flags=flags,
        )

    def _salvage(self, spec: StageSpec, exc: ContractViolation) -> tuple[StageOutput, list[str]]:
        """The usable part of an answer that still breaks its contract after the repair turn,
        and one problem sentence saying what code changed (it lands for review). Without any
        structured answer there is nothing to keep: ``exc`` is raised."""
        if exc.answer is None:
            raise exc
        output, notes = salvage(spec.output_model, exc.answer, where=spec.slug)
        self.files.append_event("stage_salvaged", spec.slug, notes=notes, error=exc.to_dict())
        shown = "; ".join(notes[:6]) + (f"; … {len(notes) - 6} more" if len(notes) > 6 else "")
        return output, [
            f"the answer did not fit the {spec.output_model.__name__} contract after one repair "
            f"turn; code kept the usable part ({shown})"
        ]

    def _downgrade_unsourced(self, slug: str, output: StageOutput) -> StageOutput:
        """Code rewrites what it checked: a ``web_search`` label no logged search backs is
        stored as unsourced (the label given kept beside it), logged as ``claims_downgraded``."""
        tool_calls = [e for e in self.files.events() if e.get("type") == "tool_call"]
        output, notes = downgrade_unsourced(output, slug, tool_calls)
        if notes:
            self.files.append_event("claims_downgraded", slug, downgraded=notes)
        return output

    def _record_impact(self, slug: str, state: SessionState, output: StageOutput) -> None:
        """A re-run (rework, resume after an anchor edit) replaces an output: what that did to
        the invariants, computed by code, goes on the record as an ``invariant_impact`` event."""
        before = state.outputs.get(slug)
        if before is None:
            return
        impact = compute_impact(slug, before, output, state.anchor)
        if impact.invariants:
            self.files.append_event(
                "invariant_impact",
                slug,
                touched=impact.touched,
                broken=impact.broken,
                notes=impact_lines(impact),
            )

    def revalidate(self, slug: str, state: SessionState) -> tuple[list[Finding], dict[str, float]]:
        """The validators of ``slug`` again, on its output in ``state`` (a producer's output the
        receiving stage revised): (findings, similarity to the idea and the anchor)."""
        return self._post_validate(slug, state, state.outputs[slug])

    def _post_validate(
        self, slug: str, state: SessionState, output: StageOutput
    ) -> tuple[list[Finding], dict[str, float]]:
        if self.post_validator is None:
            return [], {}
        after = state.model_copy(update={"outputs": {**state.outputs, slug: output}})
        tool_calls = [e for e in self.files.events() if e.get("type") == "tool_call"]
        findings, divergence = self.post_validator(slug, after, tool_calls)
        for f in findings:
            self.files.append_event("validation", slug, **f.model_dump(mode="json"))
        return findings, divergence

    def _failed(self, stage: str, error: dict[str, Any]) -> None:
        self.files.append_event("stage_failed", stage, error=error)

    # -- anchor -------------------------------------------------------------------------------
    def extract_anchor(self, state: SessionState) -> ConceptAnchor:
        """Distil the anchor; ask to tighten (never truncate) while it is over budget."""
        stage = ANCHOR_AGENT
        system = load_prompt("anchor_extraction.md")
        analysis = state.outputs.get(ANCHOR_SOURCE.slug)
        started = time.perf_counter()
        self.files.append_event("stage_started", stage, rework=False)
        problems: list[str] = []
        try:
            for _ in range(MAX_ANCHOR_TIGHTENING + 1):
                ctx = build_anchor_context(state.idea, analysis, problems)
                answer = self.caller.ask(stage, "heavy", system, ctx, ConceptAnchor).as_extracted()
                anchor = ground_anchor(answer, state.idea)
                tokens = anchor.token_count()
                if tokens <= ANCHOR_TOKEN_BUDGET:
                    break
                problems = [
                    f"The rendered anchor is ≈{tokens} tokens; the budget is "
                    f"{ANCHOR_TOKEN_BUDGET}. Tighten it: fewer, shorter items; keep "
                    "every invariant the idea states."
                ]
                self.files.append_event("stage_reask", stage, problems=problems)
            else:
                raise StageFailed(
                    stage,
                    f"the anchor stayed over its {ANCHOR_TOKEN_BUDGET}-token "
                    f"budget (≈{tokens}) after {MAX_ANCHOR_TIGHTENING} "
                    "requests to tighten it; it is never truncated.",
                )
        except ContractViolation as exc:
            self._failed(stage, exc.to_dict())
            raise StageFailed(stage, str(exc), cause=exc.to_dict()) from None
        except HaythamError as exc:
            self._failed(stage, exc.to_dict())
            raise
        anchor = self._pin(state, anchor)
        self.files.append_event(
            "stage_completed",
            stage,
            tokens=tokens,
            status="completed",
            wall_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return anchor

    def _pin(self, state: SessionState, anchor: ConceptAnchor) -> ConceptAnchor:
        """Pins wherever a trait family exists: one extra structured call asks for the pins the
        extraction left out; what is still missing becomes a Gate 1 question for the founder.
        A failed call loses nothing: the founder is asked instead (the failure is logged)."""
        if not unpinned(anchor):
            return anchor
        missing = [i.id for i in unpinned(anchor)]
        try:
            ctx = build_pin_context(state.idea, anchor.render(), pin_request(anchor))
            answer = self.caller.ask(
                PIN_AGENT,
                "heavy",
                load_prompt("anchor_pins.md"),
                ctx,
                TraitPins,
                account_as=ANCHOR_AGENT,
            )
            anchor = apply_pins(anchor, answer)
        except HaythamError as exc:
            self.files.append_event("anchor_pins_failed", ANCHOR_AGENT, error=exc.to_dict())
        anchor = ask_founder(anchor)
        self.files.append_event(
            "anchor_pins",
            ANCHOR_AGENT,
            asked=missing,
            pinned={i.id: i.trait for i in anchor.invariants if i.id in missing and i.trait},
            founder=[i.id for i in anchor.invariants if i.id in missing and i.needs_pin],
        )
        return anchor


__all__ = ["StageRunner", "StageResult", "view_of", "StageOutput", "ANCHOR_AGENT"]
