"""Run every validator over a snapshot: the lexical pass, then the embedding pass.

Each pass runs its validators in the order of :data:`~haytham.config.VALIDATOR_NAMES`, the one
place that order is kept (it also orders the findings): :data:`LEXICAL` and :data:`EMBEDDING`
say only which names each pass runs. invariant_coverage runs in both: its structural checks
lexically, its carriers by meaning (:mod:`haytham.validate.carriers`) with the embeddings.

``stages=None`` validates the whole session; ``stages={spec.slug}`` keeps only findings whose
subject is that stage and embeds only what those findings need (the stage, its pair
partner, the idea and the anchor — the embedder's cache already holds the latter after the first
stage), so the pipeline can call it after every stage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from functools import partial
from types import MappingProxyType

from haytham.errors import HaythamError
from haytham.stages import get_stage, idea_analysis
from haytham.validate import (
    appetite,
    carriers,
    claims,
    competitor_map,
    contradiction,
    divergence,
    frameworks,
    invariant_coverage,
    semantic,
    trait_propagation,
)
from haytham.validate.common import DESCRIPTIVE, STAGE_NUMBER, Context, finding
from haytham.validate.embeddings import Embedder, Encoder
from haytham.validate.model import (
    EMBEDDING_CONTRADICTION,
    EMBEDDING_DIVERGENCE,
    INVARIANT_COVERAGE,
    VALIDATOR_NAMES,
    Finding,
    Snapshot,
    ValidationReport,
    ValidatorSettings,
)
from haytham.validate.semantic import SessionVectors

log = logging.getLogger(__name__)

Curve = dict[str, dict[str, float]]
"""slug -> the stage's row of the divergence curve (:func:`haytham.validate.divergence.curve`)."""
LexicalCheck = Callable[[Context], list[Finding]]
EmbeddingCheck = Callable[[Context, SessionVectors], tuple[list[Finding], Curve]]


def _carriers(ctx: Context, _vecs: SessionVectors) -> tuple[list[Finding], Curve]:
    return carriers.check(ctx), {}


def _contradiction(ctx: Context, vecs: SessionVectors) -> tuple[list[Finding], Curve]:
    return contradiction.check(ctx, vecs), {}


LEXICAL: Mapping[str, LexicalCheck] = MappingProxyType(
    {
        trait_propagation.NAME: trait_propagation.check,
        invariant_coverage.NAME: invariant_coverage.check,
        claims.NAME: claims.check,
        appetite.NAME: appetite.check,
        frameworks.FRAMEWORK_COHERENCE: frameworks.check,
        competitor_map.NAME: competitor_map.check,
    }
)
"""The validators that read words and structure, by name (run in ``VALIDATOR_NAMES`` order)."""
EMBEDDING: Mapping[str, EmbeddingCheck] = MappingProxyType(
    {
        INVARIANT_COVERAGE: _carriers,
        EMBEDDING_DIVERGENCE: divergence.check,
        EMBEDDING_CONTRADICTION: _contradiction,
    }
)
"""The checks that need the session's embeddings, by validator name (``VALIDATOR_NAMES`` order);
only embedding_divergence adds to the curve."""


def _guarded(name: str, fn: Callable[[], list[Finding]]) -> list[Finding]:
    """A validator bug becomes a finding naming it instead of failing the pipeline."""
    try:
        return fn()
    except HaythamError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported, never swallowed silently
        log.exception("validator %s failed", name)
        return [finding(name, None, f"validator {name} failed: {type(exc).__name__}: {exc}")]


def _embedding_stages(ctx: Context) -> set[str]:
    slugs = {s for s in ctx.snap.outputs if ctx.wants(s)} | contradiction.needed(ctx)
    if slugs & set(DESCRIPTIVE) and idea_analysis.SPEC.slug in ctx.snap.outputs:
        slugs.add(idea_analysis.SPEC.slug)  # the reference for "possibly dropped"
    return slugs


def run_validators(
    snap: Snapshot,
    *,
    stages: Collection[str] | None = None,
    settings: ValidatorSettings | None = None,
    embedder: Encoder | None = None,
) -> ValidationReport:
    """Validate ``snap``; findings are warnings unless their validator is in ``settings.blocking``.

    Pass the process's :class:`Embedder` to avoid loading the model again; without one (and with
    embeddings on) a new one is created for this call.

    Raises:
        InputError: ``stages`` names an unknown stage.
        ConfigError: embeddings are on but the model cannot be loaded.
    """
    settings = settings if settings is not None else ValidatorSettings()
    wanted = None if stages is None else frozenset(get_stage(s).slug for s in stages)
    if settings.embeddings and embedder is None:
        embedder = Embedder()  # loads its model on first use only
    ctx = Context(snap=snap, settings=settings, stages=wanted, embedder=embedder)
    found: list[Finding] = []
    for name in VALIDATOR_NAMES:
        if name in LEXICAL:
            found += _guarded(name, partial(LEXICAL[name], ctx))
    curve: Curve = {}
    if settings.embeddings:
        slugs = _embedding_stages(ctx)
        if slugs:
            vecs = semantic.build(ctx, slugs)

            def embedded(check: EmbeddingCheck) -> list[Finding]:
                fs, rows = check(ctx, vecs)
                curve.update(rows)
                return fs

            for name in VALIDATOR_NAMES:
                if name in EMBEDDING:
                    found += _guarded(name, partial(embedded, EMBEDDING[name]))
    order = {name: i for i, name in enumerate(VALIDATOR_NAMES)}
    kept = [
        f.model_copy(update={"severity": settings.severity(f.validator, f.severity)})
        for f in found
        if ctx.wants(f.stage)
    ]
    kept.sort(key=lambda f: (STAGE_NUMBER.get(f.stage or "", 0), order.get(f.validator, 99)))
    ordered = dict(sorted(curve.items(), key=lambda kv: STAGE_NUMBER.get(kv[0], 99)))
    return ValidationReport(findings=kept, divergence=ordered)
