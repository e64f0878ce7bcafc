"""Words too generic to count as evidence, and key-term helpers for the lexical checks.

No synonym lists and no domain vocabulary: terms are compared after
:func:`haytham.validate.text.stem` only. Meaning (paraphrase, word choice) is the embedding
validators' job, and traceability is compared by id, so nothing here needs to know a domain.
"""

from __future__ import annotations

from haytham.validate.text import stem, terms

GENERIC = frozenset(
    stem(w)
    for w in (
        "app",
        "application",
        "platform",
        "product",
        "system",
        "service",
        "feature",
        "features",
        "tool",
        "user",
        "users",
        "people",
        "person",
        "thing",
        "things",
        "way",
        "support",
        "supported",
        "allow",
        "allows",
        "ability",
        "able",
        "need",
        "needs",
        "must",
        "should",
        "based",
        "basis",
        "model",
        "structure",
        "base",
        "role",
        "type",
        "mode",
        "constraint",
        "level",
        "policy",
        "requirement",
        "rule",
        "format",
        "kind",
        "method",
        "value",
        "property",
        "mvp",
        "v1",
        "version",
        "simple",
        "simply",
        "basic",
        "core",
        "main",
        "key",
        "focus",
        "focused",
        "specific",
        "distinctive",
        "not",
        "rather",
        "instead",
        "generic",
        "default",
        "common",
        "pattern",
        "patterns",
        "standard",
        "typical",
    )
)
"""Words too generic to count as evidence for (or against) an invariant."""


def key_terms(text: str) -> list[str]:
    """Distinctive stemmed terms of ``text`` (generic words removed), in order, once each."""
    return list(dict.fromkeys(t for t in terms(text) if t not in GENERIC))


def hits(needles: list[str], haystack: set[str]) -> list[str]:
    """The needles found in ``haystack``."""
    return [n for n in dict.fromkeys(needles) if n in haystack]
