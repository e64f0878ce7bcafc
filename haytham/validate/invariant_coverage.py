"""Invariant coverage (ADR-022 1/6): every anchor invariant survives WHAT, HOW and STORIES.

For each WHAT/HOW/STORIES stage and each invariant:

* **accounted** — the envelope's ``anchor_compliance`` lists it as preserved or overridden (an
  override needs a real reason); otherwise it was dropped silently;
* **evidenced** — in the stages that describe the whole product (mvp-scope, capability-model,
  story-generation) the payload's affirmed (non-negated, IN-scope) text mentions enough of the
  invariant's value key terms (with a small thesaurus) and, when the property names a specific
  subject ("audit_trail", "group_structure"), that subject too unless most value terms are there;
* **not contradicted** — what the invariant rules out ("no network calls", "no delivery") is not
  described affirmatively in one clause of a descriptive stage;
* **not scoped out** — no mvp-scope OUT-of-scope item is about the invariant (its subject word
  in the title, or the value's key terms), even when the stage claims to preserve it; an OUT item
  that matches one of the anchor's non-goals at least as well is honouring the anchor.

Identity features are checked in the descriptive stages too: a feature written as "X, not Y" is
genericized when Y's terms (those the anchor does not itself use) appear affirmed in the payload,
lost when none of X's key terms appear, and reported when a stage lists it under
``identity_features_genericized``.

Catches: the Power of 8 drifts (group structure scoped OUT, orchestrator role and timing
constraint dropped, async post-and-reply replacing the live gathering) and stages that claim
compliance their payload does not show.

Cannot catch: paraphrase with none of the key terms or their listed synonyms (the embedding
validator complements it), a contradiction spread over several clauses, or whether an
override's reason is any good.
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
    value_terms,
)
from haytham.validate.lexicon import GENERIC_SUBJECTS, expand, hits, key_terms
from haytham.validate.model import INVARIANT_COVERAGE, Finding
from haytham.validate.negation import affirmed_clauses, affirmed_terms
from haytham.validate.text import normalize, short, strings_of, term_set, terms

NAME = INVARIANT_COVERAGE
_TRIVIAL_REASON = re.compile(
    r"^\s*(?:n/?a|none|-+|tbd|todo|\.+|no reason|not applicable)?\s*$", re.IGNORECASE
)
_SKIP = (
    *COMPUTED_KEYS,
    "out_of_scope",
    "alternatives",
    "id",
    "serves",
    "serves_scope",
    "implements",
    "depends_on",
    "capabilities",
)
SUBJECT_WAIVER = 0.7
"""Share of value terms that makes a missing subject word acceptable as evidence."""


def _payload_text(out: StageOutput) -> str:
    return ". ".join(strings_of(out.payload, skip=_SKIP))


def _anchor_vocabulary(ctx: Context) -> frozenset[str]:
    """Terms the anchor itself affirms (goal, constraints, invariant values)."""
    out: set[str] = set()
    if ctx.snap.anchor is not None:
        a = ctx.snap.anchor
        texts = [a.intent.goal, *a.intent.explicit_constraints, *(i.value for i in a.invariants)]
        for text in texts:
            out |= affirmed_terms(text)
    return frozenset(out)


def _subject_terms(inv: Invariant) -> list[str]:
    return [t for t in key_terms(inv.property.replace("_", " ")) if t not in GENERIC_SUBJECTS]


def _affirmed_value_terms(inv: Invariant) -> list[str]:
    """Key terms of the value's affirmed part ("…; no public sign-up" drops "public sign-up")."""
    return value_terms(inv)[0]


def _negated_value_terms(inv: Invariant) -> list[str]:
    """Key terms of what the value rules out ("no network calls" → network, call)."""
    return value_terms(inv)[1]


def evidenced(
    needles: list[str], haystack: set[str], min_fraction: float
) -> tuple[bool, list[str]]:
    if not needles:
        return True, []
    found = hits(needles, haystack)
    return len(found) >= max(1, round(min_fraction * len(needles) + 1e-9)), found


def _out_of_scope(ctx: Context, inv: Invariant) -> list[str]:
    """OUT-of-scope items of mvp-scope that are about ``inv`` (and not about a non-goal)."""
    scope, anchor = ctx.payload("mvp-scope"), ctx.snap.anchor
    value = _affirmed_value_terms(inv)
    if scope is None or anchor is None or not value:
        return []  # an invariant that is itself an exclusion ("no student data") is honoured
    subject = _subject_terms(inv)
    goals = [term_set(g) for g in anchor.intent.non_goals]
    matches = []
    for item in scope.out_of_scope:
        title, body = term_set(item.title), term_set(f"{item.title}. {item.description}")
        subj_title = hits(subject, title)
        subj_any, val = hits(subject, body), hits(value, body)
        score = len(set(subj_any) | set(val))
        many = len(val) >= max(2, -(-len(value) // 2)) and bool(hits(value, title))
        if not (many or (subj_any and val) or subj_title):
            continue
        goal_score = max((len([t for t in body if expand(t) & g]) for g in goals), default=0)
        if goal_score >= max(score, 2):
            continue
        matches.append(f"{item.id} {item.title!r}")
    return matches


def _contradicted(inv: Invariant, clauses: list[set[str]]) -> list[str]:
    """Terms of what ``inv`` rules out that one affirmed clause of the stage describes."""
    ruled_out = _negated_value_terms(inv)
    if not ruled_out:
        return []
    need = min(2, len(ruled_out))
    for clause in clauses:
        found = [t for t in ruled_out if t in clause]  # literal: synonyms blur polarity
        if len(found) >= need:
            return found
    return []


def _evidence(inv: Invariant, affirmed: set[str], min_fraction: float) -> tuple[bool, list[str]]:
    value = _affirmed_value_terms(inv) or key_terms(inv.value)
    subject = _subject_terms(inv)
    ok, got = evidenced(value, affirmed, min_fraction)
    if ok and subject and not hits(subject, affirmed):
        ok = len(got) >= SUBJECT_WAIVER * len(value)
    return ok, got


def _check_invariant(
    ctx: Context, slug: str, out: StageOutput, inv: Invariant, text: str | None
) -> list[Finding]:
    comp = out.anchor_compliance
    prop = inv.property
    override = next(
        (
            o
            for o in comp.invariants_overridden
            if mentions_invariant(compliance_names([o.invariant]), prop)
        ),
        None,
    )
    if override is not None:
        if _TRIVIAL_REASON.match(override.reason) or len(override.reason.split()) < 3:
            return [
                finding(
                    NAME,
                    slug,
                    f"{slug} overrides {prop} without a real reason",
                    invariant=prop,
                    evidence=f"reason: {override.reason!r}",
                )
            ]
        return []
    claimed = mentions_invariant(compliance_names(comp.invariants_preserved), prop)
    how = "while claiming to preserve it" if claimed else "without overriding it"
    if slug == "mvp-scope":
        scoped_out = _out_of_scope(ctx, inv)
        if scoped_out:
            return [
                finding(
                    NAME,
                    slug,
                    f"mvp-scope puts {prop} ({inv.value!r}) out of scope {how}",
                    invariant=prop,
                    evidence="; ".join(scoped_out),
                )
            ]
    if text is not None and resolved(inv):
        against = _contradicted(inv, [term_set(c) for c in affirmed_clauses(text)])
        if against:
            return [
                finding(
                    NAME,
                    slug,
                    f"{slug} contradicts {prop} ({inv.value!r}) {how}",
                    invariant=prop,
                    evidence=f"contradicting clause terms: {against}",
                )
            ]
        ok, got = _evidence(inv, term_set(text), ctx.settings.evidence_min_fraction)
        if not ok:
            needles = _subject_terms(inv) + (_affirmed_value_terms(inv) or key_terms(inv.value))
            what = "claims to preserve" if claimed else "silently drops"
            return [
                finding(
                    NAME,
                    slug,
                    f"{slug} {what} {prop} ({inv.value!r}) but its payload never mentions it",
                    invariant=prop,
                    evidence=f"key terms {needles}; found {got}",
                )
            ]
    if not claimed:
        return [
            finding(
                NAME,
                slug,
                f"{slug} neither preserves nor overrides {prop} in anchor_compliance",
                invariant=prop,
                evidence=f"preserved: {comp.invariants_preserved}",
            )
        ]
    return []


def _split_feature(feature: IdentityFeature, vocab: frozenset[str]) -> tuple[list[str], list[str]]:
    """(positive key terms, terms of the generic alternative the anchor does not itself use)."""
    pos_text, neg_text = feature_parts(feature.feature)
    positive = key_terms(pos_text)
    negative = [t for t in key_terms(neg_text) if t not in positive and not expand(t) & vocab]
    return positive, negative


def _same_feature(admitted: str, feature: str) -> bool:
    a, f = set(terms(admitted)), set(terms(feature))
    return bool(a) and len(a & f) >= max(1, min(len(a), len(f)) // 2)


def _check_identity(
    ctx: Context, slug: str, out: StageOutput, text: str, vocab: frozenset[str]
) -> list[Finding]:
    assert ctx.snap.anchor is not None
    found: list[Finding] = []
    affirmed = affirmed_terms(text)
    admitted = [normalize(s) for s in out.anchor_compliance.identity_features_genericized]
    for feature in ctx.snap.anchor.identity:
        label = short(feature.feature, 80)
        if any(_same_feature(a, feature.feature) for a in admitted):
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} reports genericizing identity feature {label!r}",
                    evidence="identity_features_genericized",
                )
            )
            continue
        positive, negative = _split_feature(feature, vocab)
        generic = hits(negative, affirmed)
        needed = 1 if len(negative) == 1 else max(2, (len(negative) + 1) // 2)
        if negative and len(generic) >= needed:
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} genericizes identity feature {label!r}: it describes the "
                    "generic alternative the anchor rules out",
                    evidence=f"generic terms: {generic}",
                )
            )
            continue
        got = hits(positive, affirmed)
        if positive and not got:  # features are prose: any one of their key terms is evidence
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} loses identity feature {label!r}",
                    evidence=f"key terms {positive}; found {got}",
                )
            )
    return found


def check(ctx: Context) -> list[Finding]:
    anchor = ctx.snap.anchor
    if anchor is None:
        return []
    slugs = [s for s in WHAT_HOW_STORIES if s in ctx.snap.outputs and ctx.wants(s)]
    if not slugs:
        return []
    vocab = _anchor_vocabulary(ctx)
    found: list[Finding] = []
    for slug in slugs:
        out = ctx.snap.outputs[slug]
        text = _payload_text(out) if slug in DESCRIPTIVE else None
        for inv in anchor.invariants:
            found += _check_invariant(ctx, slug, out, inv, text)
        if text is not None:
            found += _check_identity(ctx, slug, out, text, vocab)
    return found
