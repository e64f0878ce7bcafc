"""Invariant coverage (ADR-022 1/6): every anchor invariant survives WHAT, HOW and STORIES.

For each WHAT/HOW/STORIES stage and each invariant:

* **accounted** — the envelope's ``anchor_compliance`` lists it as preserved or overridden (an
  override needs a real reason); otherwise it was dropped silently;
* **evidenced** — in the stages that describe the whole product (mvp-scope, capability-model,
  story-generation) the payload's affirmed (non-negated, IN-scope) text mentions enough of the
  invariant's key terms (with a small thesaurus), unless the stage overrides it;
* **not scoped out** — no mvp-scope OUT-of-scope item is about the invariant (its subject word
  or two of its value's key terms), even when the stage claims to preserve it; an OUT item that
  matches one of the anchor's non-goals at least as well is honouring the anchor, not dropping it.

Identity features are checked the same way in the descriptive stages: a feature written as
"X, not Y" is genericized when Y's terms appear affirmed in the payload, or when X's key terms
are missing; a stage that lists a feature under ``identity_features_genericized`` is reported.

Catches: the Power of 8 drifts (group structure scoped OUT, orchestrator role and timing
constraint dropped, async post-and-reply replacing the live gathering) and stages that claim
compliance their payload does not show.

Cannot catch: paraphrase with none of the key terms or their listed synonyms (the embedding
validator complements it), an invariant mentioned only to be contradicted in a way the negation
heuristic misses, or whether an override's reason is any good.
"""

from __future__ import annotations

import re

from haytham.schemas.anchor import IdentityFeature, Invariant
from haytham.schemas.envelope import StageOutput
from haytham.validate.common import (
    COMPUTED_KEYS,
    DESCRIPTIVE,
    WHAT_HOW_STORIES,
    Context,
    compliance_names,
    feature_parts,
    finding,
    mentions_invariant,
    resolved,
)
from haytham.validate.lexicon import GENERIC_SUBJECTS, expand, hits, key_terms
from haytham.validate.model import INVARIANT_COVERAGE, Finding
from haytham.validate.text import affirmed_terms, normalize, short, strings_of, term_set, terms

NAME = INVARIANT_COVERAGE
_TRIVIAL_REASON = re.compile(r"^\s*(?:n/?a|none|-+|tbd|todo|\.+|no reason|not applicable)?\s*$",
                             re.IGNORECASE)


def _payload_text(out: StageOutput) -> str:
    skip = (*COMPUTED_KEYS, "out_of_scope", "alternatives", "id", "serves", "serves_scope",
            "implements", "depends_on", "capabilities")
    return ". ".join(strings_of(out.payload, skip=skip))


def _subject_terms(inv: Invariant) -> list[str]:
    return [t for t in key_terms(inv.property.replace("_", " ")) if t not in GENERIC_SUBJECTS]


def _value_terms(inv: Invariant) -> list[str]:
    return key_terms(inv.value)


def evidenced(needles: list[str], haystack: set[str], min_fraction: float) -> tuple[bool, list[str]]:
    if not needles:
        return True, []
    found = hits(needles, haystack)
    return len(found) >= max(1, round(min_fraction * len(needles) + 1e-9)), found


def _out_of_scope(ctx: Context, inv: Invariant) -> list[str]:
    """OUT-of-scope items of mvp-scope that are about ``inv`` (and not about a non-goal)."""
    scope = ctx.payload("mvp-scope")
    anchor = ctx.snap.anchor
    if scope is None or anchor is None:
        return []
    subject, value = _subject_terms(inv), _value_terms(inv)
    goals = [term_set(g) for g in anchor.intent.non_goals]
    matches = []
    for item in scope.out_of_scope:
        title, body = term_set(item.title), term_set(f"{item.title}. {item.description}")
        subj_title = hits(subject, title)
        subj_any, val = hits(subject, body), hits(value, body)
        score = len(set(subj_any) | set(val))
        if not (len(val) >= 2 or (subj_any and val) or subj_title):
            continue
        goal_score = max((len([t for t in body if expand(t) & g]) for g in goals), default=0)
        if goal_score >= max(score, 2):
            continue
        matches.append(f"{item.id} {item.title!r}")
    return matches


def _check_invariant(ctx: Context, slug: str, out: StageOutput, inv: Invariant,
                     affirmed: set[str] | None) -> list[Finding]:
    comp = out.anchor_compliance
    preserved = compliance_names(comp.invariants_preserved)
    overrides = {o.invariant: o for o in comp.invariants_overridden}
    override = next((o for k, o in overrides.items()
                     if mentions_invariant(compliance_names([k]), inv.property)), None)
    found: list[Finding] = []
    prop = inv.property
    if override is not None:
        if _TRIVIAL_REASON.match(override.reason) or len(override.reason.split()) < 3:
            found.append(finding(NAME, slug, f"{slug} overrides {prop} without a real reason",
                                 invariant=prop, evidence=f"reason: {override.reason!r}"))
        return found
    claimed = mentions_invariant(preserved, prop)
    if slug == "mvp-scope":
        scoped_out = _out_of_scope(ctx, inv)
        if scoped_out:
            how = "while claiming to preserve it" if claimed else "without overriding it"
            found.append(finding(
                NAME, slug, f"mvp-scope puts {prop} ({inv.value!r}) out of scope {how}",
                invariant=prop, evidence="; ".join(scoped_out)))
            return found
    if affirmed is not None and resolved(inv):
        ok, got = evidenced(_value_terms(inv) or _subject_terms(inv), affirmed,
                            ctx.settings.evidence_min_fraction)
        if not ok:
            what = "claims to preserve" if claimed else "silently drops"
            found.append(finding(
                NAME, slug, f"{slug} {what} {prop} ({inv.value!r}) but its payload never "
                "mentions it", invariant=prop,
                evidence=f"key terms {_value_terms(inv)}; found {got}"))
            return found
    if not claimed:
        found.append(finding(
            NAME, slug, f"{slug} neither preserves nor overrides {prop} in anchor_compliance",
            invariant=prop, evidence=f"preserved: {comp.invariants_preserved}"))
    return found


def _split_feature(feature: IdentityFeature) -> tuple[list[str], list[str]]:
    pos_text, neg_text = feature_parts(feature.feature)
    positive = key_terms(pos_text)
    negative = key_terms(neg_text)
    negative = [t for t in negative if t not in positive]
    return positive, negative


def _check_identity(ctx: Context, slug: str, out: StageOutput, affirmed: set[str],
                    text: str) -> list[Finding]:
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    found: list[Finding] = []
    admitted = {normalize(s) for s in out.anchor_compliance.identity_features_genericized}
    for feature in anchor.identity:
        label = short(feature.feature, 80)
        if admitted and any(_same_feature(a, feature.feature) for a in admitted):
            found.append(finding(NAME, slug, f"{slug} reports genericizing identity feature "
                                 f"{label!r}", evidence="identity_features_genericized"))
            continue
        positive, negative = _split_feature(feature)
        generic = hits(negative, affirmed)
        if negative and len(generic) >= max(1, (len(negative) + 1) // 2):
            found.append(finding(
                NAME, slug, f"{slug} genericizes identity feature {label!r}: it describes the "
                "generic alternative the anchor rules out",
                evidence=f"generic terms found: {generic}"))
            continue
        ok, got = evidenced(positive, affirmed, ctx.settings.evidence_min_fraction)
        if not ok:
            found.append(finding(
                NAME, slug, f"{slug} loses identity feature {label!r}",
                evidence=f"key terms {positive}; found {got}"))
    return found


def _same_feature(admitted: str, feature: str) -> bool:
    a, f = set(terms(admitted)), set(terms(feature))
    return bool(a) and len(a & f) >= max(1, min(len(a), len(f)) // 2)


def check(ctx: Context) -> list[Finding]:
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    found: list[Finding] = []
    for slug in WHAT_HOW_STORIES:
        out = ctx.output(slug)
        if out is None or not ctx.wants(slug):
            continue
        affirmed = None
        if slug in DESCRIPTIVE:
            text = _payload_text(out)
            affirmed = affirmed_terms(text)
        for inv in anchor.invariants:
            found += _check_invariant(ctx, slug, out, inv, affirmed)
        if affirmed is not None:
            found += _check_identity(ctx, slug, out, affirmed, text)
    return found
