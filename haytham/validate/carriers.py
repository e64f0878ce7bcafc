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

**Words as well as meaning (issue 26, second round).** A cosine drop alone also fires on a
terse faithful stage ("SMS 1 wk before 1st Sat." for "one walk a month"), and a real drift that
keeps the topic ("upcoming bookings" for "at most two upcoming bookings") drops the cosine
only a little. So a warning also needs the stage's carriers to be **silent** on the target: none
of the target's *specific* terms appears in them while another stage's carriers use them. A
target's specific terms are its own words (an invariant's value, a part's phrase without the
words its sibling parts share) that the session uses mostly in the carriers of that target
(``carrier_specific_share`` of the items that use the word carry it): "radio", "overdue" for an
overdue flag, not "party" or "warden", which every item of that idea uses. No word list: the
anchor's own words and the session's own use of them decide. An OUT item of the stage that
honours the target speaks for it too: "Out: no money changes hands" is the stage using the
words of "kilos for kilos, never for money", though its IN carrier only says "no price". So
does a carrier that names the trait value the invariant pins ("SMS" for "notices go out by
text message", pinned ``communication=sms``): the pin is the invariant in the vocabulary's
words (a value word counts only where it is specific, like the other words: "swap" in a swap
ledger is everywhere). Three ways to warn:

* the cosine drop of ``carrier_drop`` (``carrier_part_drop`` for a part) and silence;
* a smaller drop (``carrier_silent_drop``) and silence in a stage that is otherwise **not**
  terse: for the other targets it carries, it uses at least ``carrier_lexical_level_min``
  (median) of the specific terms the best stage uses. A terse stage is silent on many targets; a
  drifted one on one.

* for a **part** (issue 26, seventh round), in a stage that is not terse
  (``carrier_part_level_min``), when its carriers speak for the invariant but have dropped one
  condition: the part is expressed ``carrier_part_gap`` worse than in another stage, that is
  ``carrier_part_sibling_gap`` more than the best-kept sibling part lost (the carrier still
  says the other condition as well as elsewhere), and its carriers leave out the part's words
  that every other stage's carriers agree on (all of them, or at least two: one word of three
  is what a synonym does). "Handed over to an adult named on the child's card who shows the
  matching stub" that became "whoever shows the stub collects" is the case: the stub is still
  there, the name is not, and the silence test, which needs two words of evidence, misses it.

The thresholds are :class:`~haytham.config.ValidatorSettings` fields (``carrier_*``).

Words are compared after stemming, and a word matches another that starts with it (4 letters
or more: "induct"/"induction", "encrypt"/"encrypted").

Needs two descriptive stages that carry the invariant (a stage cannot be compared with
nothing) and embeddings. Cannot catch a drift that leaves every stage at once, or one that
keeps the invariant's words while changing its sense (the phase verifier's per-item audit).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

import numpy as np

from haytham.schemas.anchor import Invariant
from haytham.schemas.traits import value_words
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
from haytham.validate.lexicon import key_terms
from haytham.validate.model import INVARIANT_COVERAGE, Finding, ValidatorSettings
from haytham.validate.semantic import invariant_text
from haytham.validate.text import normalize, sentences, short, term_set

PREFIX_MIN = 4
"""Two stemmed words match when one starts with the other and the shorter has this many letters."""

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


def _has(term: str, words: set[str]) -> bool:
    if term in words:
        return True
    return any(
        min(len(term), len(w)) >= PREFIX_MIN and (w.startswith(term) or term.startswith(w))
        for w in words
    )


@dataclass(frozen=True)
class Words:
    """Which of a target's specific terms each stage's carriers use."""

    specific: tuple[str, ...]
    used: dict[str, frozenset[str]]  # slug -> specific terms its carriers use
    honoured: dict[str, frozenset[str]] = field(default_factory=dict)
    """slug -> specific terms its OUT items that honour the target use (they speak for it in
    the silence test, not in how wordy the stage is)."""

    def silent(self, slug: str, settings: ValidatorSettings) -> bool:
        """The stage's carriers (and its OUT items honouring the target) use at most
        ``carrier_silent_share`` of the specific terms another stage's carriers use (at least
        ``carrier_other_terms_min`` of them)."""
        others = [len(u) for s, u in self.used.items() if s != slug]
        if not others or max(others) < settings.carrier_other_terms_min:
            return False
        return len(self.said(slug)) <= settings.carrier_silent_share * max(others)

    def said(self, slug: str) -> frozenset[str]:
        """The specific terms the stage's carriers and its OUT items honouring the target use."""
        return self.used.get(slug, frozenset()) | self.honoured.get(slug, frozenset())

    def unused(self, slug: str) -> list[str]:
        """Specific terms some other stage's carriers use and this stage's do not."""
        return sorted(frozenset().union(*self.used.values()) - self.said(slug))

    def dropped(self, slug: str) -> bool:
        """Whether the stage's carriers (and its OUT items honouring the target) leave out the
        words every other stage's carriers agree on: all of them, or at least two."""
        others = [u for s, u in self.used.items() if s != slug]
        agreed = frozenset.intersection(*others) if others else frozenset()
        missing = agreed - self.said(slug)
        return bool(missing) and (missing == agreed or len(missing) >= 2)

    def share(self, slug: str) -> float | None:
        """How many specific terms the stage's carriers use, as a share of the wordiest stage's
        count (``None`` when no stage's carriers use any)."""
        best = max((len(u) for u in self.used.values()), default=0)
        return len(self.used.get(slug, ())) / best if best else None


_ASIDE = re.compile(r"\([^()]*\)")
"""A parenthesis in an invariant gives examples ("the safety check (no car seats, cot
mattresses …)"); a faithful summary may leave them out."""


def _words_of(text: str) -> list[str]:
    """Key terms of a target's text without its asides, and without fragments of fewer than
    three letters ("wi", "fi" of "Wi-Fi"; numbers count). Words the target rules out stay: a
    carrier honours "never video" by saying "no video"."""
    bare = _ASIDE.sub(" ", text).strip() or text
    return [t for t in key_terms(bare) if len(t) >= 3 or t.isdigit()]


def _target_terms(inv: Invariant, key: str, text: str) -> list[str]:
    own = _words_of(text)
    if key == inv.id:
        return own
    siblings = {t for k, p in inv.part_texts().items() if k != key for t in _words_of(p)}
    return [t for t in own if t not in siblings]


def _traced(ctx: Context) -> tuple[list[Invariant], dict[str, list[Item]]]:
    """The anchor's resolved ``requires`` invariants (exclusions left out), and per descriptive
    stage that ran, its IN items that carry something and have text (``ctx.snap.anchor`` set)."""
    anchor = ctx.snap.anchor
    invs = [i for i in anchor.invariants if not is_exclusion(i) and resolved(i)] if anchor else []
    stages = {
        slug: [i for i in stage_items(ctx, slug) if not i.out and i.carries and i.text]
        for slug in DESCRIPTIVE
        if ctx.output(slug) is not None
    }
    return invs, stages


def words(ctx: Context) -> dict[str, Words]:
    """target key -> which of its specific terms each descriptive stage's carriers use."""
    if ctx.snap.anchor is None:
        return {}
    invs, stages = _traced(ctx)
    bags = {(slug, i.id): term_set(i.text) for slug, items in stages.items() for i in items}
    by_id = {(slug, i.id): i for slug, items in stages.items() for i in items}
    exclusions = {  # OUT items that honour something, with their words
        slug: [
            (i, term_set(i.text)) for i in stage_items(ctx, slug) if i.out and i.honours and i.text
        ]
        for slug in stages
    }
    share = ctx.settings.carrier_specific_share
    out: dict[str, Words] = {}
    for inv in invs:
        for key, text in _targets(inv).items():
            carriers = {
                (slug, c.id) for slug, items in stages.items() for c in _carriers(items, inv, key)
            }
            if not carriers:
                continue
            specific = [
                term
                for term in _target_terms(inv, key, text)
                if _mostly_in([k for k, bag in bags.items() if _has(term, bag)], carriers, share)
            ]
            used: dict[str, frozenset[str]] = {}
            for slug, item in carriers:
                found = {t for t in specific if _has(t, bags[(slug, item)])}
                used[slug] = used.get(slug, frozenset()) | found
            honoured = {  # "Out: no money changes hands" speaks for "never for money"
                slug: frozenset(
                    t
                    for item, bag in items
                    if key in item.honours or inv.id in item.honoured
                    for t in specific
                    if _has(t, bag)
                )
                for slug, items in exclusions.items()
            }
            for phrase in _pin_phrases(inv) if key == inv.id else ():
                # "SMS" names the pin of "notices go out by text message" (when the session
                # says it mostly in that invariant's carriers: "swap" in a swap ledger does not)
                users = [k for k, item in by_id.items() if _says(phrase, item.text)]
                if not _mostly_in(users, carriers, share):
                    continue
                for slug, item in carriers:
                    if _says(phrase, by_id[(slug, item)].text):
                        honoured[slug] = honoured.get(slug, frozenset()) | {f"pin:{phrase}"}
            out[key] = Words(tuple(specific), used, honoured)
    return out


def _mostly_in(users: list[tuple[str, str]], carriers: set[tuple[str, str]], share: float) -> bool:
    """Whether at least ``share`` of the items (slug, id) that use a word carry the target: the
    word is specific to it, not one the whole idea uses."""
    return bool(users) and sum(k in carriers for k in users) / len(users) >= share


def _says(phrase: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(phrase)}\b", normalize(text)) is not None


def _pin_phrases(inv: Invariant) -> tuple[str, ...]:
    """How prose names the trait value ``inv`` pins ("sms" for ``communication=sms``)."""
    ref = inv.trait_ref
    return tuple(sorted(value_words(*ref))) if ref is not None else ()


def lexical_level(lex: dict[str, Words], slug: str) -> float:
    """Median share, over the targets a stage carries, of the specific terms the best stage
    uses that this stage uses too (1.0: as wordy as the best stage; low: a terse stage)."""
    shares = [v for w in lex.values() if slug in w.used and (v := w.share(slug)) is not None]
    return statistics.median(shares) if shares else 0.0


def _carriers(items: list[Item], inv: Invariant, key: str) -> list[Item]:
    if key == inv.id:
        return [i for i in items if inv.id in i.carried]
    return [i for i in items if key in i.carries or inv.id in i.carries]


def expression(ctx: Context) -> dict[str, dict[str, Expression]]:
    """slug -> target key -> how well the stage's carriers express it (descriptive stages that
    trace invariants; ``requires`` invariants that are not exclusions, and their parts)."""
    if ctx.snap.anchor is None or ctx.embedder is None:
        return {}
    invs, stages = _traced(ctx)
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


def _part_left(
    expr: dict[str, dict[str, Expression]],
    slug: str,
    inv: Invariant,
    key: str,
    lost: float,
    s: ValidatorSettings,
) -> bool:
    """Whether the stage's carriers dropped part ``key`` and kept a sibling: the part is
    expressed ``carrier_part_gap`` worse than in another stage, and that is
    ``carrier_part_sibling_gap`` more than the best-kept sibling part lost ("checked and
    restrung" that became "restrung": the restringing is still there, the check is not)."""
    if lost < s.carrier_part_gap:
        return False
    row = expr[slug]
    kept = []
    for sib in inv.part_texts():
        others = [r[sib].score for o, r in expr.items() if o != slug and sib in r]
        if sib == key or sib not in row or not others:
            continue
        kept.append(max(others) - row[sib].score)
    return bool(kept) and lost - min(kept) >= s.carrier_part_sibling_gap


def check(ctx: Context) -> list[Finding]:
    """Warnings for a stage whose carriers of an invariant (of one of its parts) express it
    ``carrier_drop`` (``carrier_part_drop``) or more worse than another descriptive stage's
    carriers do."""
    anchor = ctx.snap.anchor
    expr = expression(ctx)
    if anchor is None or not expr:
        return []
    s = ctx.settings
    lex = words(ctx)
    found: list[Finding] = []
    for slug, row in expr.items():
        level = lexical_level(lex, slug)
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
                w = lex.get(key)
                if w is None:
                    continue
                lost = best.score - here.score
                if w.silent(slug, s):
                    if lost < drop and (
                        lost < s.carrier_silent_drop or level < s.carrier_lexical_level_min
                    ):
                        continue
                elif not (
                    key != inv.id
                    and level >= s.carrier_part_level_min
                    and _part_left(expr, slug, inv, key, lost, s)
                    and w.dropped(slug)
                ):
                    continue  # the carriers still use the target's own words
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
                        f"{list(best.carriers)} (closest {best.item}); words of the target that "
                        f"other stages' carriers use and {slug}'s do not: "
                        f"{w.unused(slug)}",
                    )
                )
                if key == inv.id:
                    break  # the whole invariant has left: its parts say the same
    return found
