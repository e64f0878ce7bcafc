"""The embedded view of a session shared by the two embedding validators.

Each stage becomes a list of sentence *segments* (TL;DR, content and payload strings, de-duplicated)
with an ``excluded`` flag for text that describes what is *not* built (markdown under
"Out of scope"-like headings, mvp-scope ``out_of_scope`` items, decision alternatives). Only the
stages a run needs are embedded, in one batched ``encode`` call; the embedder's cache makes
repeated runs (one per stage in the pipeline) embed only new text. A stage's document vector is
the re-normalised mean of its non-excluded segments; the idea's and the anchor's likewise.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from haytham.schemas.anchor import ConceptAnchor, IdentityFeature, Invariant
from haytham.schemas.envelope import StageOutput
from haytham.stages import idea_analysis
from haytham.validate.common import (
    COMPUTED_KEYS,
    STAGE_NUMBER,
    Context,
    feature_parts,
    stage_items,
)
from haytham.validate.embeddings import DIMENSION
from haytham.validate.text import Segment, markdown_segments, normalize, sentences, strings_of

_IDS = (
    "id",
    "serves",
    "serves_scope",
    "implements",
    "depends_on",
    "capabilities",
    "requires",
    "technologies",
    "recommendation",
    "value",
    "pain",
    "status",
    "jtbd_match",
    "layer",
    "origin",
    "severity",
    "support",
    "likelihood",
    "impact",
    "switching_cost",
    "category",
    "component",
    "passed",
    "score",
)
_EXCLUDED_KEYS = ("out_of_scope", "alternatives", "pivot_options")
PAYLOAD_FROM = 5
"""From mvp-scope on, a stage's payload is embedded (earlier stages only feed the curve)."""


def stage_segments(slug: str, out: StageOutput) -> list[Segment]:
    """The sentences that represent a stage (OUT items and alternatives marked excluded).

    idea-analysis: TL;DR and content (the reference for "possibly dropped"); market-context to
    validation-summary: TL;DR only (they only feed the divergence curve); mvp-scope onwards:
    TL;DR and payload strings — the content restates the payload, and embedding both doubled the
    cost without changing any calibration result.
    """
    segs: list[Segment] = [Segment(s) for s in sentences(out.tldr)]
    number = STAGE_NUMBER.get(slug, 99)
    if number == 1:
        segs += markdown_segments(out.content)
    if number < PAYLOAD_FROM:
        return _dedupe(segs)
    payload = out.payload.model_dump(mode="json")
    for key, value in payload.items():
        if key in COMPUTED_KEYS:
            continue
        excluded = key in _EXCLUDED_KEYS
        for text in strings_of(value, skip=_IDS + _EXCLUDED_KEYS if not excluded else _IDS):
            segs += [Segment(s, excluded) for s in sentences(text)]
        if not excluded:
            for inner in _EXCLUDED_KEYS:
                for text in _nested(value, inner):
                    segs += [Segment(s, True) for s in sentences(text)]
    return _dedupe(segs)


def _dedupe(segs: list[Segment]) -> list[Segment]:
    seen: dict[str, Segment] = {}
    for s in segs:
        key = normalize(s.text)
        if key not in seen or (seen[key].excluded and not s.excluded):
            seen[key] = s
    return list(seen.values())


def _nested(value: object, key: str) -> list[str]:
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += list(strings_of(v)) if k == key else _nested(v, key)
    elif isinstance(value, list):
        for v in value:
            out += _nested(v, key)
    return out


def invariant_text(inv: Invariant) -> str:
    """The text embedded for an invariant: ``"<property in words>: <value>"``."""
    return f"{inv.property.replace('_', ' ')}: {inv.value}"


def identity_text(feature: IdentityFeature) -> str:
    """The positive part of a feature ("X, not Y" → "X"), which is what must survive."""
    return feature_parts(feature.feature)[0]


def anchor_texts(anchor: ConceptAnchor) -> list[str]:
    """What the anchor says the product *is*: goal, explicit constraints, invariants, identity.

    Non-goals, the invariants' source quotes and "why distinctive" notes are left out: they name
    the generic product the idea is not (or repeat the idea), and would pull the anchor's
    vector toward exactly the drift it is meant to expose. These are the texts the invariant and
    identity checks embed anyway, so the anchor costs few extra tokens.
    """
    return [
        anchor.intent.goal,
        *anchor.intent.explicit_constraints,
        *(invariant_text(i) for i in anchor.decided()),
        *(identity_text(f) for f in anchor.identity),
    ]


def generic_texts(anchor: ConceptAnchor) -> list[str]:
    """What a genericized version of this idea would say, from the anchor itself."""
    out = list(anchor.intent.non_goals)
    for f in anchor.identity:
        out += [t for t in (f.why_distinctive, feature_parts(f.feature)[1]) if t.strip()]
    return out


def _mean(vectors: np.ndarray) -> np.ndarray:
    if len(vectors) == 0:
        return np.zeros(DIMENSION, dtype=np.float32)
    v = vectors.mean(axis=0)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


@dataclass
class StageVectors:
    """One stage's sentences and their embeddings, row for row."""

    segments: list[Segment]
    vectors: np.ndarray

    @property
    def included(self) -> np.ndarray:
        """Embeddings of the sentences not under an excluding heading ("Out of scope"…)."""
        mask = np.array([not s.excluded for s in self.segments], dtype=bool)
        return self.vectors[mask] if len(self.segments) else self.vectors

    @property
    def included_segments(self) -> list[Segment]:
        """The sentences not under an excluding heading, in the order of :attr:`included`."""
        return [s for s in self.segments if not s.excluded]

    @property
    def doc(self) -> np.ndarray:
        """The stage's document vector: the normalised mean of :attr:`included`."""
        return _mean(self.included)


@dataclass
class SessionVectors:
    """Embedded idea, anchor, invariants, identity features, non-goals and chosen stages."""

    idea: np.ndarray
    anchor: np.ndarray | None
    reference: np.ndarray
    """How the session first expressed the idea: idea-analysis's sentences (written in the same
    pipeline's style as the later stages), or the idea's own when idea-analysis is absent."""
    invariants: dict[str, np.ndarray] = field(default_factory=dict)  # by invariant id
    identity: list[np.ndarray] = field(default_factory=list)
    generic: np.ndarray | None = None
    """The generic product this idea is not, in the anchor's own words: its non-goals, each
    identity feature's "why distinctive" and the "not Y" of a feature written "X, not Y"."""
    stages: dict[str, StageVectors] = field(default_factory=dict)
    items: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """slug -> IN item id -> its sentences' vectors (items that carry an invariant only)."""


def build(ctx: Context, slugs: Collection[str]) -> SessionVectors:
    """Embed everything the embedding validators need for ``slugs`` in one ``encode`` call."""
    assert ctx.embedder is not None
    snap = ctx.snap
    texts: list[str] = []

    def take(items: list[str]) -> slice:
        start = len(texts)
        texts.extend(items)
        return slice(start, len(texts))

    idea_slice = take(sentences(snap.idea) or [snap.idea.strip() or "(empty idea)"])
    anchor = snap.anchor
    anchor_slice = take(anchor_texts(anchor)) if anchor is not None else None
    inv_slices = (
        {i.id: take([invariant_text(i)]) for i in anchor.decided()} if anchor is not None else {}
    )
    id_slices = [take([identity_text(f)]) for f in anchor.identity] if anchor is not None else []
    generic_slice = take(generic_texts(anchor)) if anchor is not None else None
    stage_segs: dict[str, tuple[list[Segment], slice]] = {}
    item_slices: dict[str, dict[str, slice]] = {}
    for slug in sorted(slugs, key=lambda s: STAGE_NUMBER.get(s, 99)):
        out = snap.outputs.get(slug)
        if out is None:
            continue
        segs = stage_segments(slug, out)
        stage_segs[slug] = (segs, take([s.text for s in segs]))
        carriers = [i for i in stage_items(ctx, slug) if i.carries and not i.out and i.text]
        if carriers:
            item_slices[slug] = {i.id: take(sentences(i.text) or [i.text]) for i in carriers}
    matrix = ctx.embedder.encode(texts)
    reference = matrix[idea_slice]
    if idea_analysis.SPEC.slug in stage_segs:
        segs, s = stage_segs[idea_analysis.SPEC.slug]
        kept = [i for i, seg in zip(range(s.start, s.stop), segs, strict=True) if not seg.excluded]
        reference = matrix[kept] if kept else reference
    return SessionVectors(
        idea=_mean(matrix[idea_slice]),
        reference=reference,
        anchor=_mean(matrix[anchor_slice]) if anchor_slice is not None else None,
        invariants={k: matrix[s][0] for k, s in inv_slices.items()},
        identity=[matrix[s][0] for s in id_slices],
        generic=matrix[generic_slice] if generic_slice is not None else None,
        stages={slug: StageVectors(segs, matrix[s]) for slug, (segs, s) in stage_segs.items()},
        items={
            slug: {i: matrix[s] for i, s in by_id.items()} for slug, by_id in item_slices.items()
        },
    )
