"""Is an anchor entry's source quote really in the founder's idea? (ADR-022 1a, checked by code)

The anchor extractor must quote the idea (or closely paraphrase it) for every invariant. A weak
model invents entries and gives them a plausible "source"; nothing downstream would notice,
because every later stage trusts the anchor. :func:`is_grounded` accepts a quote when, after
Unicode normalisation (NFKC, case-folded, punctuation ignored), it is a substring of the idea,
or when at least :data:`GROUNDED_SHARE` of its content terms occur in the idea. Terms are
stemmed words (stopwords dropped); a term also matches an idea term with the same first
:data:`PREFIX` characters (practise / practice, update / updated); text in scripts written
without spaces (CJK, kana, Hangul, Thai) is compared by character pairs.

:func:`ground_anchor` applies it to an extracted anchor: an invariant whose source is not found
is marked ``grounded=False`` and, if it claimed confidence ≥ 0.7, is capped below the
clarification threshold with the ambiguity "not found in your idea" and two options (keep the
value, or leave it open), so Gate 1 asks the founder. An identity feature is a description, so
only its optional ``source`` quote is checked.
"""

from __future__ import annotations

import re
import unicodedata

from haytham.schemas.anchor import (
    AMBIGUITY_THRESHOLD,
    LEAVE_OPEN,
    ConceptAnchor,
    IdentityFeature,
    Invariant,
)
from haytham.validate.text import STOPWORDS, stem

GROUNDED_SHARE = 2 / 3  # a close paraphrase keeps most of its content words; an invention does not
PREFIX = 5
UNGROUNDED_CONFIDENCE = AMBIGUITY_THRESHOLD - 0.2  # below the threshold: Gate 1 asks
_WORD = re.compile(r"\w+")
_UNSPACED = re.compile(
    r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _flat(text: str) -> str:
    """Words only, single-spaced (punctuation and case ignored)."""
    return " ".join(_WORD.findall(_normal(text)))


def terms(text: str) -> list[str]:
    """Content terms: stemmed words without stopwords; unspaced scripts as character pairs."""
    out: list[str] = []
    for word in _WORD.findall(_normal(text)):
        if _UNSPACED.search(word):
            chars = [c for c in word if _UNSPACED.match(c)]
            out += ["".join(p) for p in zip(chars, chars[1:], strict=False)] or chars
            continue
        if word in STOPWORDS:
            continue
        s = stem(word)
        if s not in STOPWORDS and (len(s) > 1 or s.isdigit()):
            out.append(s)
    return out


def _found(term: str, idea_terms: set[str], prefixes: set[str]) -> bool:
    if term in idea_terms:
        return True
    return len(term) >= PREFIX and term[:PREFIX] in prefixes


def grounding_share(source: str, idea: str) -> float:
    """The share of ``source``'s content terms that occur in ``idea`` (1.0 for a substring)."""
    flat = _flat(source)
    if flat and flat in _flat(idea):
        return 1.0
    wanted = terms(source)
    if not wanted:
        return 0.0
    idea_terms = set(terms(idea))
    prefixes = {t[:PREFIX] for t in idea_terms if len(t) >= PREFIX}
    return sum(_found(t, idea_terms, prefixes) for t in wanted) / len(wanted)


def is_grounded(source: str, idea: str) -> bool:
    """Whether ``source`` quotes (or closely paraphrases) ``idea``: :func:`grounding_share`
    reaches :data:`GROUNDED_SHARE`."""
    return grounding_share(source, idea) >= GROUNDED_SHARE


def _ground_invariant(inv: Invariant, idea: str) -> Invariant:
    if is_grounded(inv.source, idea):
        return inv.model_copy(update={"grounded": True})
    update: dict[str, object] = {"grounded": False}
    if not inv.is_ambiguous:
        update |= {
            "confidence": min(inv.confidence, UNGROUNDED_CONFIDENCE),
            "ambiguity": "Its source quote is not found in your idea.",
            "clarification_options": [inv.value, LEAVE_OPEN],
        }
    return inv.model_copy(update=update)


def _ground_feature(feature: IdentityFeature, idea: str) -> IdentityFeature:
    """A feature is a description, not a quote: only its ``source`` quote, if any, is checked."""
    grounded = is_grounded(feature.source, idea) if feature.source.strip() else None
    return feature.model_copy(update={"grounded": grounded})


def ground_anchor(anchor: ConceptAnchor, idea: str) -> ConceptAnchor:
    """``anchor`` with every entry checked against ``idea`` (see the module docstring)."""
    return anchor.model_copy(
        update={
            "invariants": [_ground_invariant(i, idea) for i in anchor.invariants],
            "identity": [_ground_feature(f, idea) for f in anchor.identity],
        }
    )
