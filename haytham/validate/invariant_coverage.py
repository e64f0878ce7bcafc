"""Invariant coverage (ADR-022 1/6): every anchor invariant survives WHAT, HOW and STORIES, by id.

Structural checks, one warning each (no reading of prose):

* **carried** — in each descriptive stage (mvp-scope, capability-model, story-generation) every
  ``requires`` invariant is carried: some IN item lists its id in ``carries``. A ``forbids``
  invariant needs no carrier (nothing can "deliver" an exclusion), nor does one pinned to a
  trait's ``none`` (``payments=none``: an exclusion written as a requirement); an OUT item that
  honours it is the anchor at work and is never flagged;
* **assumptions** — an IN item's declared ``assumes`` (capabilities, stories) against the pins:
  a value the pin does not allow, for an item that claims to carry the invariant, or for any
  item where the family admits one value only (one way to join, to pay, to run; live or not);
* **not scoped out** — an mvp-scope OUT item that carries a ``requires`` invariant without
  saying it honours it takes the invariant out of the MVP;
* **not contradicted** — no IN item affirmatively describes what an invariant's pinned trait
  rules out (open registration under ``auth=invite_only``, realtime under ``realtime=false``,
  payments under ``payments=none``), read with trait propagation's technical vocabulary;
* **a claim that contradicts itself** — an IN item that lists a ``forbids`` invariant in its
  ``carries`` while its affirmed text names the forbidden thing (two of its key terms in one
  clause with no negation: "each sheet has a download button" under "chord sheets are never
  downloaded");
* **references resolve** — every ``carries`` / ``honours_exclusion`` id names an invariant
  (the pipeline repairs near-misses and re-asks once; a session loaded from disk may still have
  them);
* **overrides have a reason**, and a stage that reports genericizing an identity feature says so.

Second opinions (``info``): a stage that neither preserves nor overrides an invariant in its
``anchor_compliance``; any other IN item whose affirmed text names what an invariant excludes;
an item whose text describes what its own declared ``assumes`` value rules out (a story that
declares ``auth=invite_only`` and describes a public sign-up form; where a pin covers the family,
the pinned check above already warns).

A descriptive stage that declares no ``carries`` at all (a model that ignored the optional
fields, or a session from before them) is not judged here: the embedding validator's semantic
coverage speaks for it. Whether an item that carries an id really describes it is the embedding
validator's job too.

Cannot catch: a wrong id that happens to exist, or the quality of an override's reason.
"""

from __future__ import annotations

import re

from haytham.schemas.anchor import Invariant
from haytham.schemas.envelope import StageOutput
from haytham.schemas.traits import satisfies
from haytham.validate.common import (
    DESCRIPTIVE,
    WHAT_HOW_STORIES,
    Context,
    Item,
    finding,
    is_exclusion,
    names_invariant,
    override_for,
    resolved,
    stage_items,
    traced,
    value_terms,
)
from haytham.validate.lexicon import key_terms
from haytham.validate.model import INVARIANT_COVERAGE, Finding
from haytham.validate.negation import affirmed_clauses
from haytham.validate.text import short, term_set, terms
from haytham.validate.trait_propagation import (
    carried_contradiction,
    declared_contradiction,
    pinned_contradiction,
)

NAME = INVARIANT_COVERAGE
_TRIVIAL_REASON = re.compile(
    r"^\s*(?:n/?a|none|-+|tbd|todo|\.+|no reason|not applicable)?\s*$", re.IGNORECASE
)


def _label(inv: Invariant) -> str:
    return f"{inv.id} {inv.property} ({short(inv.value, 70)!r})"


def _ruled_out(inv: Invariant) -> list[str]:
    """Key terms of what ``inv`` excludes: for a ``forbids`` invariant the forbidden thing (the
    value's first clause: "any network call: files never leave the machine" → network, call);
    for a ``requires`` one the part its value negates ("pickup only, no delivery" → delivery)."""
    if inv.polarity == "forbids":
        head = re.split(r"[:;(\u2014\u2013]", inv.value, maxsplit=1)[0]
        return key_terms(head)
    return value_terms(inv)[1]


def _names_exclusion(inv: Invariant, item: Item) -> list[str]:
    """Terms of what ``inv`` excludes that one affirmed clause of ``item`` describes."""
    ruled = _ruled_out(inv)
    if not ruled:
        return []
    need = min(2, len(ruled))
    for clause in affirmed_clauses(item.text):
        found = [t for t in ruled if t in term_set(clause)]
        if len(found) >= need:
            return found
    return []


_COMMON_SHARE = 0.2
"""A word a fifth of the session's traced IN items use is the idea's own vocabulary ("student",
"session" in a classroom quiz), not evidence of the forbidden thing."""


def _common(ctx: Context, terms: list[str]) -> set[str]:
    """Those of ``terms`` that at least ``_COMMON_SHARE`` of the session's traced IN items use."""
    bags = [term_set(i.text) for s in WHAT_HOW_STORIES for i in stage_items(ctx, s) if not i.out]
    return {t for t in terms if bags and sum(t in b for b in bags) / len(bags) >= _COMMON_SHARE}


def _unknown_refs(slug: str, items: list[Item], known: set[str]) -> list[Finding]:
    found = []
    for item in items:
        bad = [r for r in (*item.carries, *item.honours) if r not in known]
        if bad:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{item.id} references invariants the anchor does not have: {bad}",
                    item=item.id,
                    evidence=f"the anchor's ids: {sorted(known)}",
                )
            )
    return found


def _parts_uncarried(slug: str, inv: Invariant, carriers: list[Item]) -> list[Finding]:
    """Parts of a compound ``requires`` invariant that no carrier lists, when the stage carries
    it by part ids: an item listing the whole id carries every part here (the embedding check,
    :mod:`haytham.validate.carriers`, attributes it to the parts its text expresses)."""
    if inv.polarity != "requires" or not inv.parts or any(inv.id in i.carries for i in carriers):
        return []
    return [
        finding(
            NAME,
            slug,
            f"no IN item of {slug} carries part {pid} ({short(text, 70)!r}) of {_label(inv)}",
            invariant=inv,
            evidence="carried parts: "
            + ", ".join(sorted({c for i in carriers for c in i.carries if c.startswith(inv.id)})),
        )
        for pid, text in inv.part_texts().items()
        if not any(pid in i.carries for i in carriers)
    ]


def _descriptive(ctx: Context, slug: str, out: StageOutput) -> list[Finding]:
    anchor = ctx.snap.anchor
    assert anchor is not None
    items = stage_items(ctx, slug)
    if not traced(items):
        return []
    found = _unknown_refs(slug, items, set(anchor.ref_ids()))
    ins = [i for i in items if not i.out]
    for inv in anchor.decided():  # an open invariant has no value to carry or preserve
        if override_for(ctx, out, inv) is not None:
            continue
        scoped_out = [
            i for i in items if i.out and inv.id in i.carried and inv.id not in i.honoured
        ]
        if inv.polarity == "requires" and scoped_out:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} puts {_label(inv)} out of scope: "
                    + ", ".join(f"{i.id} {short(i.text, 60)!r}" for i in scoped_out),
                    invariant=inv,
                    item=scoped_out[0].id,
                    evidence="an OUT item carries a required invariant and does not honour it",
                )
            )
            continue
        carriers = [i for i in ins if inv.id in i.carried]
        if inv.polarity == "requires" and not carriers and not is_exclusion(inv):
            found.append(
                finding(
                    NAME,
                    slug,
                    f"no IN item of {slug} carries {_label(inv)}",
                    invariant=inv,
                    evidence=f"{len(ins)} IN items; carried ids: "
                    f"{sorted({c for i in ins for c in i.carries})}",
                )
            )
            continue
        found += _parts_uncarried(slug, inv, carriers)
        pinned = [(i, e) for i in ins if (e := pinned_contradiction(inv, i.text))]
        pinned += [(i, e) for i in carriers if (e := carried_contradiction(inv, i.text))]
        if pinned:
            item, evidence = pinned[0]
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{item.id} describes what {_label(inv)} rules out "
                    f"({inv.polarity} {inv.trait})",
                    invariant=inv,
                    item=item.id,
                    evidence=evidence
                    + (f"; also {', '.join(i.id for i, _ in pinned[1:])}" if pinned[1:] else ""),
                )
            )
            continue
        # an item claiming to carry a ``forbids`` invariant while describing the forbidden
        # thing contradicts its own claim (a warning); any other item only may (info)
        for item in sorted(ins, key=lambda i: inv.polarity != "forbids" or inv.id not in i.carried):
            against = _names_exclusion(inv, item)
            if against:
                claimed = (
                    inv.polarity == "forbids"
                    and inv.id in item.carried
                    and not set(against) <= _common(ctx, against)
                )
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{item.id} claims to carry {_label(inv)} but describes what it forbids"
                        if claimed
                        else f"{item.id} may describe what {_label(inv)} excludes",
                        invariant=inv,
                        item=item.id,
                        evidence=f"terms {against} in {short(item.text, 120)!r}",
                        info=not claimed,
                    )
                )
                break
    return found


_EXCLUSIVE = ("auth", "payments", "deployment", "realtime")
"""Families where an item assuming another value than the pin contradicts it even when the item
does not carry the invariant (one way to join, to pay, to run; live or not). A different channel
or rhythm in one item (an email reminder under a video pin) contradicts only an item that claims
to carry the invariant."""
_CLOSED_AUTH = ("invite_only", "approval", "sso", "api_key")
_NO_MONEY = ("none", "barter")


def _assumption_conflict(family: str, pinned: str, assumed: str, carried: bool) -> bool:
    """Whether an item assuming ``family=assumed`` contradicts a ``requires`` pin ``pinned``."""
    if satisfies(family, pinned, assumed):
        return False
    if carried:
        return True
    if family not in _EXCLUSIVE:
        return False
    if family == "auth":  # a closed pin is broken only by a way in that is not closed
        return pinned not in _CLOSED_AUTH or assumed not in _CLOSED_AUTH
    if family == "payments":
        return (pinned in _NO_MONEY) != (assumed in _NO_MONEY) or pinned == "barter"
    return True


def _assumptions(ctx: Context, slug: str, out: StageOutput) -> list[Finding]:
    """Items' declared ``assumes`` against the anchor's pins: an item that assumes another value
    than a ``requires`` pin of its family (or the value a ``forbids`` pin rules out)."""
    anchor = ctx.snap.anchor
    assert anchor is not None
    found: list[Finding] = []
    ins = [i for i in stage_items(ctx, slug) if not i.out and i.assumes]
    for item in ins:  # second opinion: the item's text against its own declared values
        for family, value in item.assumes:
            said = declared_contradiction(family, value, item.text)
            if said:
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{item.id} declares {family}={value} but its text describes {said}",
                        item=item.id,
                        evidence=short(item.text, 160),
                        info=True,
                    )
                )
    for inv in anchor.invariants:
        ref = inv.trait_ref
        if ref is None or not resolved(inv) or override_for(ctx, out, inv) is not None:
            continue
        family, pinned = ref
        for item in ins:
            assumed = dict(item.assumes).get(family)
            if assumed is None:
                continue
            carried = inv.id in item.carried
            if inv.polarity == "forbids":
                broken = assumed == pinned
            else:
                broken = _assumption_conflict(family, pinned, assumed, carried)
            if not broken:
                continue
            claim = " while claiming to carry it" if carried else ""
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{item.id} assumes {family}={assumed}{claim}, but {_label(inv)} "
                    f"{inv.polarity} {family}={pinned}",
                    invariant=inv,
                    item=item.id,
                    evidence=f"{item.id} assumes {dict(item.assumes)}; {short(item.text, 120)!r}",
                )
            )
    return found


def _accounted(ctx: Context, slug: str, out: StageOutput) -> list[Finding]:
    """Overrides need a reason; silence in anchor_compliance is a second opinion."""
    anchor = ctx.snap.anchor
    assert anchor is not None
    found: list[Finding] = []
    preserved = out.anchor_compliance.invariants_preserved
    for inv in anchor.decided():  # an open invariant has no value to carry or preserve
        override = override_for(ctx, out, inv)
        if override is not None:
            if _TRIVIAL_REASON.match(override.reason) or len(override.reason.split()) < 3:
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{slug} overrides {_label(inv)} without a real reason",
                        invariant=inv,
                        evidence=f"reason: {override.reason!r}",
                    )
                )
            continue
        if not any(names_invariant(ctx, ref, inv) for ref in preserved):
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} neither preserves nor overrides {_label(inv)} in anchor_compliance",
                    invariant=inv,
                    evidence=f"preserved: {preserved}",
                    info=True,
                )
            )
    return found


def _same_feature(admitted: str, feature: str) -> bool:
    a, f = set(terms(admitted)), set(terms(feature))
    return bool(a) and len(a & f) >= max(1, min(len(a), len(f)) // 2)


def _genericized_reported(ctx: Context, slug: str, out: StageOutput) -> list[Finding]:
    assert ctx.snap.anchor is not None
    admitted = out.anchor_compliance.identity_features_genericized
    return [
        finding(
            NAME,
            slug,
            f"{slug} reports genericizing identity feature {short(f.feature, 80)!r}",
            evidence="anchor_compliance.identity_features_genericized",
        )
        for f in ctx.snap.anchor.identity
        if any(_same_feature(a, f.feature) for a in admitted)
    ]


def check(ctx: Context) -> list[Finding]:
    """Coverage findings for every WHAT/HOW/STORIES stage this run wants: overrides and
    anchor_compliance in each, carriers, assumptions and reported genericizing in descriptive ones."""
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    found: list[Finding] = []
    for slug in WHAT_HOW_STORIES:
        out = ctx.output(slug)
        if out is None or not ctx.wants(slug):
            continue
        found += _accounted(ctx, slug, out)
        if slug in DESCRIPTIVE:
            found += _descriptive(ctx, slug, out)
            found += _assumptions(ctx, slug, out)
            found += _genericized_reported(ctx, slug, out)
    return found
