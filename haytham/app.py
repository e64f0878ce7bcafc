"""Wires the service with what the product runs on every session: phase verifiers and the
deterministic post-validators (one embedding model per process, loaded on first use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haytham.config import Settings
from haytham.schemas.anchor import ConceptAnchor
from haytham.service import Haytham
from haytham.stages import BY_SLUG
from haytham.validate import Embedder, Snapshot, ValidatorSettings, run_validators
from haytham.verify.factory import make_verifier


class PostValidation:
    """Runs the validators concerned with the stage that just ran (no LLM).

    Returns the findings (warnings unless made blocking by ``HAYTHAM_BLOCKING_VALIDATORS``) and
    that stage's similarity to the idea and the anchor (the divergence curve in summary.json).
    """

    def __init__(self, settings: ValidatorSettings | None = None) -> None:
        self.settings = settings or ValidatorSettings()
        self.embedder = Embedder() if self.settings.embeddings else None

    def __call__(self, slug: str, state: Mapping[str, Any]) -> tuple[list[dict], dict]:
        anchor = state.get("anchor")
        snap = Snapshot(
            idea=state.get("idea", ""),
            anchor=ConceptAnchor.model_validate(anchor) if anchor else None,
            outputs={
                s: BY_SLUG[s].output_model.model_validate(raw)
                for s, raw in (state.get("outputs") or {}).items()
            },
            tool_calls=state.get("tool_calls") or (),
        )
        report = run_validators(snap, stages={slug}, settings=self.settings, embedder=self.embedder)
        return (
            [f.model_dump(mode="json") for f in report.findings],
            report.divergence.get(slug, {}),
        )


def make_service(settings: Settings) -> Haytham:
    return Haytham(
        settings,
        verifier_factory=make_verifier,
        post_validator=PostValidation(settings.validators),
    )
