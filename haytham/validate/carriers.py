"""Carriers that claim an invariant their text has left (issue 26), and parts of compound ones.

An item's ``carries`` is a claim; a drifting model keeps the claim while rewriting the text.
This check reads the carriers' text by **meaning, relative to the session**: for every
``requires`` invariant (and every part ``INV-3a`` of a compound one) it measures, in each
descriptive stage (mvp-scope, capability-model, story-generation), how close the closest
sentence of the items that carry it comes to it (cosine). A faithful stage may be terse or
wordy, so the absolute value says little; but the session's descriptive stages describe the
same product, so one stage whose carriers express an invariant (or a part) far worse than
another stage's carriers do — ``carrier_drop`` or more below, ``carrier_part_drop`` for a
part, whose short phrase varies more between faithful wordings — has left it while still
claiming it. That is a warning naming the stage, the carriers and the invariant.

**Parts.** A carrier that lists a part id (``INV-3b``) carries that part. A carrier that lists
only the whole id (``INV-3``) is attributed to the parts its text expresses: a part counts as
carried in a stage when the stage's carriers of the invariant (whole id or that part id)
express it about as well as the session's other descriptive stages do (the same relative
measure). A part no carrier expresses — the "approved by the committee" half of "members only,
approved by the committee" — is reported, though the whole id is still carried. Word lists play
no part: the part's own wording is the measure.

Needs two descriptive stages that carry the invariant (a stage cannot be compared with
nothing) and embeddings. Cannot catch a drift that leaves every stage at once, or one that
keeps the invariant's words while changing its sense (the phase verifier's per-item audit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from haytham.schemas.anchor import Invariant
from haytham.validate.common import (
    DESCRIPTIVE,
    Context,
    Item,
    finding,
    is_exclusion,
    override_for,
    resolved,
    stage_items,
)
from haytham.validate.model import INVARIANT_COVERAGE, Finding
from haytham.validate.semantic import invariant_text
from haytham.validate.text import sentences, short

NAME = INVARIANT_COVERAGE


@dataclass(frozen=True)
class Expression:
    """How well one stage's carriers express one target (an invariant or a part)."""

    score: float  # cosine of the closest carrier sentence
    item: str  # the carrier with that sentence
    carriers: tuple[str, ...]


def _targets(inv: Invariant) -> dict[str, str]:
    """target key -> text: the invariant itself and each of its parts."""
    return {inv.id: invariant_text(inv), **inv.part_texts()}


def _carriers(items: list[Item], inv: Invariant, key: str) -> list[Item]:
    if key == inv.id:
        return [i for i in items if inv.id in i.carried]
    return [i for i in items if key in i.carries or inv.id in i.carries]


def expression(ctx: Context) -> dict[str, dict[str, Expression]]:
    """slug -> target key -> how well the stage's carriers express it (descriptive stages that
    trace invariants; ``requires`` invariants that are not exclusions, and their parts)."""
    anchor = ctx.snap.anchor
    if anchor is None or ctx.embedder is None:
        return {}
    invs = [i for i in anchor.invariants if not is_exclusion(i) and resolved(i)]
    stages = {
        slug: [i for i in stage_items(ctx, slug) if not i.out and i.carries and i.text]
        for slug in DESCRIPTIVE
        if ctx.output(slug) is not None
    }
    stages = {s: items for s, items in stages.items() if items}
    if len(stages) < 2 or not invs:
        return {}
    texts: list[str] = []
    index: dict[str, tuple[int, int]] = {}
    for slug, items in stages.items():
        for item in items:
            sents = sentences(item.text) or [item.text]
            index[f"{slug}\0{item.id}"] = (len(texts), len(texts) + len(sents))
            texts += sents
    keys = [(inv, key, text) for inv in invs for key, text in _targets(inv).items()]
    start = len(texts)
    texts += [text for _, _, text in keys]
    matrix = ctx.embedder.encode(texts)
    sims = matrix[:start] @ matrix[start:].T  # sentence x target
    out: dict[str, dict[str, Expression]] = {}
    for slug, items in stages.items():
        row: dict[str, Expression] = {}
        for k, (inv, key, _) in enumerate(keys):
            carriers = _carriers(items, inv, key)
            if not carriers:
                continue
            best = [
                float(sims[a:b, k].max()) for a, b in (index[f"{slug}\0{c.id}"] for c in carriers)
            ]
            top = int(np.argmax(best))
            row[key] = Expression(best[top], carriers[top].id, tuple(c.id for c in carriers))
        out[slug] = row
    return out


def check(ctx: Context) -> list[Finding]:
    """Warnings for a stage whose carriers of an invariant (of one of its parts) express it
    ``carrier_drop`` (``carrier_part_drop``) or more worse than another descriptive stage's
    carriers do."""
    anchor = ctx.snap.anchor
    expr = expression(ctx)
    if anchor is None or not expr:
        return []
    s = ctx.settings
    found: list[Finding] = []
    for slug, row in expr.items():
        out = ctx.output(slug)
        if not ctx.wants(slug) or out is None:
            continue
        for inv in anchor.invariants:
            if override_for(ctx, out, inv) is not None:
                continue
            for key, text in _targets(inv).items():
                here = row.get(key)
                others = [(s, r[key]) for s, r in expr.items() if s != slug and key in r]
                if here is None or not others:
                    continue
                best_slug, best = max(others, key=lambda o: o[1].score)
                drop = s.carrier_drop if key == inv.id else s.carrier_part_drop
                if best.score - here.score < drop:
                    continue
                what = f"part {key} ({short(text, 70)!r}) of {inv.id} {inv.property}"
                if key == inv.id:
                    what = f"{inv.id} {inv.property} ({short(inv.value, 70)!r})"
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{', '.join(here.carriers)} claim{'s' if len(here.carriers) == 1 else ''}"
                        f" to carry {what} but no longer describe{'s' if len(here.carriers) == 1 else ''}"
                        f" it: {slug}'s closest carrier sentence is {here.score:.2f} to it, "
                        f"{best_slug}'s {best.score:.2f}",
                        invariant=inv,
                        item=here.item,
                        evidence=f"carriers in {slug}: {list(here.carriers)}; in {best_slug}: "
                        f"{list(best.carriers)} (closest {best.item})",
                    )
                )
                if key == inv.id:
                    break  # the whole invariant has left: its parts say the same
    return found
