"""Receiving-stage validation (seed 000 applied): the consuming stage judges its input items.

At three boundaries — scope items → capability-model, capabilities → build-buy-analysis,
capabilities + decisions → story-generation — the consuming stage first runs
``validate_input`` (one batched call: accepted / rejected with reasons); each rejected item goes
back to its producer's ``revise_rejected`` (one call per item); only revised items are
re-validated; at most :data:`MAX_VALIDATION_RETRIES` rounds. Items still rejected then pass
through with ``validation_warnings``, appended after the accepted items, each group in original
order. A validator that fails (any exception, a missing cassette line) accepts everything and the
fallback is logged; a reviser that fails leaves its item as it was.

Every call goes through the runner's ``ask`` (tolerant keys, one repair, typed violation) and is
accounted in ``events.jsonl`` under the row ``validate-input:<consumer>``, whose
``stage_completed`` event carries the boundary's ``quality_flags``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from haytham.agents.caller import Asker
from haytham.agents.context import Context
from haytham.config import Settings
from haytham.safety.redact import redact
from haytham.schemas.base import TolerantModel
from haytham.schemas.envelope import StageOutput
from haytham.stages import BY_SLUG, StageSpec, StageView
from haytham.stages.base import ItemSource
from haytham.state import SessionState
from haytham.storage.protocol import Session
from haytham.verify.config import input_validator_agent, reviser_agent
from haytham.verify.verdict import load_prompt

logger = logging.getLogger(__name__)

MAX_VALIDATION_RETRIES = 2
TIER = "light"
WARNINGS_KEY = "validation_warnings"


class InputRejection(TolerantModel):  # noqa: D101 - a docstring would enter the tool schema the model reads
    id: str = Field(description="The rejected item's id, exactly as given.")
    reason: str = Field(min_length=1, description="What is wrong and what would fix it.")


class InputValidationResult(TolerantModel):
    """The consuming stage's verdict on its input items (unmentioned items are accepted)."""

    accepted: list[str] = Field(default_factory=list, description="Ids of acceptable items.")
    rejected: list[InputRejection] = Field(default_factory=list)


def input_validation_enabled(settings: Settings) -> bool:
    """Whether receiving-stage validation runs: ``settings.verify.input_validation``
    (``HAYTHAM_INPUT_VALIDATION``, on by default; parsed by :func:`~haytham.config.load_settings`)."""
    return settings.verify.input_validation


@dataclass(eq=False)
class _Item:
    source: ItemSource
    data: dict[str, Any]
    reason: str = ""

    @property
    def id(self) -> str:
        return str(self.data.get("id", ""))


@dataclass
class Received:
    """The boundary's result: producer outputs to store (changed only) and its counters."""

    outputs: dict[str, StageOutput]  # every output, with the producers' final items
    changed: dict[str, StageOutput] = field(default_factory=dict)
    quality_flags: dict[str, int] = field(default_factory=dict)


class InputValidation:
    """Runs the validate-retry-process loop for a consuming stage (one per runner)."""

    def __init__(self, files: Session, ask: Asker) -> None:
        self.files = files
        self.ask = ask

    def receive(self, spec: StageSpec, state: SessionState) -> Received | None:
        """Validate ``spec``'s input items; ``None`` where the stage is no receiving boundary."""
        sources = spec.receives
        outputs = {slug: out.model_dump(mode="json") for slug, out in state.outputs.items()}
        if not sources or any(s.producer not in outputs for s in sources):
            return None
        row = f"validate-input:{spec.slug}"
        items = [
            _Item(s, {k: v for k, v in raw.items() if k != WARNINGS_KEY})
            for s in sources
            for raw in (outputs[s.producer].get("payload") or {}).get(s.field, [])
        ]
        started = time.perf_counter()
        self.files.append_event("stage_started", row, rework=False)
        rejected = self.validate_input(spec, items, state, row, 0)
        rejections, retries = len(rejected), 0
        while rejected and retries < MAX_VALIDATION_RETRIES:
            retries += 1
            revised = [
                r
                for r in (self.revise_rejected(spec, i, state, row) for i in rejected)
                if r is not None
            ]
            if not revised:
                continue
            again = {id(i) for i in self.validate_input(spec, revised, state, row, retries)}
            rejections += len(again)
            done = {id(i) for i in revised} - again
            rejected = [i for i in rejected if id(i) not in done]
        flags = {
            "items_produced": len(items),
            "validation_rejections": rejections,
            "validation_retries": retries,
        }
        warned = {id(i): f"Rejected after {retries} retries: {i.reason}" for i in rejected}
        try:
            changed = self._apply(sources, items, warned, outputs, state)
        except ValueError as exc:  # a revision the producer's schema cannot hold: keep originals
            logger.warning("revised items of %s do not fit their stage output: %s", spec.slug, exc)
            self.files.append_event(
                "input_validation",
                row,
                consumer=spec.slug,
                round=retries,
                fallback=True,
                error=f"revisions discarded: {exc}",
            )
            changed = {}
        self.files.append_event(
            "stage_completed",
            row,
            status="completed",
            wall_ms=round((time.perf_counter() - started) * 1000, 1),
            quality_flags=flags,
            warned=[i.id for i in rejected],
            revised_producers=sorted(changed),
        )
        return Received(outputs={**state.outputs, **changed}, changed=changed, quality_flags=flags)

    # -- the two agent methods ------------------------------------------------------------------
    def validate_input(
        self, spec: StageSpec, items: list[_Item], state: SessionState, row: str, round_: int
    ) -> list[_Item]:
        """One batched call; returns the rejected items (reason set). Never raises."""
        if not items:
            return []
        ctx = Context()
        ctx.add(
            "task",
            f"# Task: validate the input of stage {spec.slug} before it runs",
            f"You are the {spec.title} stage. Judge every item below against your acceptance "
            "criteria. Answer with the InputValidationResult tool: accepted ids, and "
            "rejected items with a reason that says what to fix.",
        )
        ctx.add(
            "anchor",
            "## Concept anchor (verbatim, immutable)",
            state.anchor_text or "(none)",
        )
        listing = [{"kind": i.source.kind, "from": i.source.producer, **i.data} for i in items]
        ctx.add(
            "items",
            f"## Items to validate ({len(items)})",
            f"```json\n{json.dumps(listing, indent=1, ensure_ascii=False)}\n```",
        )
        system = (
            load_prompt("input_validator.md").rstrip()
            + "\n\n"
            + load_prompt(f"input_{spec.slug}.md")
        )
        try:
            result = self.ask(
                input_validator_agent(spec.slug),
                TIER,
                system,
                ctx,
                InputValidationResult,
                account_as=row,
            )
        except Exception as exc:  # noqa: BLE001 - conservative fallback: accept everything
            logger.warning(
                "input validation of %s failed; accepting all %d items: %s",
                spec.slug,
                len(items),
                redact(str(exc)),
            )
            self.files.append_event(
                "input_validation",
                row,
                consumer=spec.slug,
                round=round_,
                items=[i.id for i in items],
                accepted=[i.id for i in items],
                rejected=[],
                fallback=True,
                error=redact(str(exc)),
            )
            return []
        by_id = {i.id: i for i in items}
        reasons = {r.id.strip(): r.reason for r in result.rejected if r.id.strip() in by_id}
        for item_id, reason in reasons.items():
            by_id[item_id].reason = reason
        rejected = [i for i in items if i.id in reasons]
        self.files.append_event(
            "input_validation",
            row,
            consumer=spec.slug,
            round=round_,
            items=[i.id for i in items],
            accepted=[i.id for i in items if i.id not in reasons],
            rejected=[{"id": i.id, "reason": i.reason} for i in rejected],
            fallback=False,
        )
        return rejected

    def revise_rejected(
        self, spec: StageSpec, item: _Item, state: SessionState, row: str
    ) -> _Item | None:
        """The producer revises one item (same id); ``None`` when it could not."""
        source = item.source
        producer = BY_SLUG[source.producer]
        ctx = Context()
        ctx.add(
            "task",
            f"# Task: revise one {source.kind} of stage {producer.slug}",
            f"Stage {spec.slug} rejected this {source.kind} that your stage "
            f"({producer.title}) produced. Revise only this item, keep its id "
            f"{item.id!r}, and answer with the {source.model.__name__} tool.",
        )
        ctx.add(
            "anchor",
            "## Concept anchor (verbatim, immutable)",
            state.anchor_text or "(none)",
        )
        produced = state.outputs.get(producer.slug)
        tldr = produced.tldr if produced is not None else ""
        ctx.add("tldr", f"## Your stage's summary (TL;DR of {producer.slug})", tldr)
        ctx.add(
            "item",
            "## The item",
            f"```json\n{json.dumps(item.data, indent=1, ensure_ascii=False)}\n```",
        )
        ctx.add("reason", f"## Why {spec.slug} rejected it", item.reason)
        try:
            revised: BaseModel = self.ask(
                reviser_agent(producer.slug),
                TIER,
                load_prompt("revise_rejected.md"),
                ctx,
                source.model,
                account_as=row,
            )
        except Exception as exc:  # noqa: BLE001 - a failed revision keeps the item as it was
            logger.warning("revision of %s %s failed: %s", source.kind, item.id, redact(str(exc)))
            self.files.append_event(
                "input_revision",
                row,
                consumer=spec.slug,
                producer=producer.slug,
                item=item.id,
                ok=False,
                error=redact(str(exc)),
            )
            return None
        data = {**revised.model_dump(mode="json"), "id": item.id}
        self.files.append_event(
            "input_revision", row, consumer=spec.slug, producer=producer.slug, item=item.id, ok=True
        )
        item.data = data
        return item

    # -- final items back into the producers' outputs ----------------------------------------
    def _apply(
        self,
        sources: tuple[ItemSource, ...],
        items: list[_Item],
        warned: dict[int, str],
        outputs: Mapping[str, Any],
        state: SessionState,
    ) -> dict[str, StageOutput]:
        lists: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for source in sources:
            mine = [i for i in items if i.source is source]
            final = [i.data for i in mine if id(i) not in warned]
            final += [{**i.data, WARNINGS_KEY: [warned[id(i)]]} for i in mine if id(i) in warned]
            lists[(source.producer, source.field)] = final
        changed: dict[str, dict[str, Any]] = {}
        for (producer, name), final in lists.items():
            raw = changed.get(producer) or outputs[producer]
            payload = raw.get("payload") or {}
            if payload.get(name, []) == final:
                continue
            changed[producer] = {**raw, "payload": {**payload, name: final}}
        return {slug: _refinalize(slug, raw, state) for slug, raw in changed.items()}


def _refinalize(slug: str, raw: dict[str, Any], state: SessionState) -> StageOutput:
    """Re-derive the producer's computed fields (e.g. coverage); items keep their warnings."""
    spec = BY_SLUG[slug]
    view = StageView(
        idea=state.idea,
        outputs={s: o for s, o in state.outputs.items() if s != slug},
        anchor=state.anchor,
        appetite=state.appetite,
    )
    return spec.complete(spec.output_model.model_validate(raw), view)[0]
