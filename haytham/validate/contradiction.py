"""Embedding contradiction (ADR-022 2c) between stage pairs that must agree.

Pairs: system-traits ↔ build-buy-analysis, build-buy-analysis ↔ architecture-decisions,
capability-model ↔ story-generation (the later stage is the subject). Two signals:

* **opposed stages** — the two stages' document vectors are less similar than ``pair_floor``
  (the ADR's BERTScore-style threshold of 0.3): they barely describe the same system.
* **opposed sentences** — a sentence of each stage on the same topic (cosine at least
  ``opposition_topic_min``) sharing a key term that one affirms and the other negates, e.g.
  "Real-time is unnecessary for this MVP" against "Supabase for its real-time subscriptions".

Limits, as the ADR states them: embedding similarity detects semantic *opposition*, not logical
contradiction — "we need real-time" and "we don't need real-time" are close in embedding space,
which is why polarity is read lexically; contradictions worded without a shared term, or spread
over several sentences, are missed; a negation cue that is not about the shared term can raise a
false alarm. Both signals read prose, so they are second opinions (``info``): shown folded away
at the gate and given to the phase verifier, never a decision on their own.
"""

from __future__ import annotations

import re

import numpy as np

from haytham.stages import (
    architecture_decisions,
    build_buy_analysis,
    capability_model,
    story_generation,
    system_traits,
)
from haytham.validate.common import Context, finding
from haytham.validate.lexicon import GENERIC
from haytham.validate.model import EMBEDDING_CONTRADICTION, Finding
from haytham.validate.negation import affirmed_terms
from haytham.validate.semantic import SessionVectors
from haytham.validate.text import short, term_set

NAME = EMBEDDING_CONTRADICTION
PAIRS: tuple[tuple[str, str], ...] = (
    (system_traits.SPEC.slug, build_buy_analysis.SPEC.slug),
    (build_buy_analysis.SPEC.slug, architecture_decisions.SPEC.slug),
    (capability_model.SPEC.slug, story_generation.SPEC.slug),
)
MAX_PER_PAIR = 3
_RULE = re.compile(
    r"\b(?:cannot|can't|can not|must not|reject|rejects|rejected|only if|unless|"
    r"fails?|invalid|without a valid)\b",
    re.IGNORECASE,
)
"""Validation rules ("cannot be saved without a topic") are negated by design, not opposed."""


def needed(ctx: Context) -> set[str]:
    """Stages this validator must embed for the run's stage filter."""
    out: set[str] = set()
    for a, b in PAIRS:
        if ctx.wants(b) and a in ctx.snap.outputs and b in ctx.snap.outputs:
            out |= {a, b}
    return out


def _opposed_term(a: str, b: str) -> str | None:
    """A key term both sentences use, explicitly negated in exactly one of them."""
    shared = {t for t in (term_set(a) & term_set(b)) - GENERIC if not t[0].isdigit()}
    if not shared:
        return None
    aa, ab = affirmed_terms(a, strong=True), affirmed_terms(b, strong=True)
    for t in sorted(shared):
        if (t in aa) != (t in ab) and not (_RULE.search(a) or _RULE.search(b)):
            return t
    return None


def check(ctx: Context, vecs: SessionVectors) -> list[Finding]:
    """Second opinions (``info``) on the later stage of each pair: opposed stages (document
    similarity under ``pair_floor``) and opposed sentences (a shared term negated in one)."""
    found: list[Finding] = []
    for a, b in PAIRS:
        va, vb = vecs.stages.get(a), vecs.stages.get(b)
        if va is None or vb is None or not ctx.wants(b):
            continue
        sim = float(va.doc @ vb.doc)
        if sim < ctx.settings.pair_floor:
            found.append(
                finding(
                    NAME,
                    b,
                    f"{b} and {a} barely describe the same system (similarity {sim:.2f} < "
                    f"{ctx.settings.pair_floor:.2f})",
                    evidence="document-level similarity",
                    info=True,
                )
            )
        sa, sb = va.included_segments, vb.included_segments
        if not sa or not sb:
            continue
        sims = va.included @ vb.included.T
        rows, cols = np.nonzero(sims >= ctx.settings.opposition_topic_min)
        order = np.argsort(-sims[rows, cols])
        reported = 0
        for k in order:
            i, j = int(rows[k]), int(cols[k])
            term = _opposed_term(sa[i].text, sb[j].text)
            if term is None:
                continue
            found.append(
                finding(
                    NAME,
                    b,
                    f"{b} may contradict {a} about {term!r} (similar sentences, opposite "
                    f"polarity, similarity {float(sims[i, j]):.2f})",
                    evidence=f"{a}: {short(sa[i].text, 120)!r} | {b}: {short(sb[j].text, 120)!r}",
                    info=True,
                )
            )
            reported += 1
            if reported >= MAX_PER_PAIR:
                break
    return found
