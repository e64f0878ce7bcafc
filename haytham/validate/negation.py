"""Negation and clauses: whether a term is affirmed or ruled out where it is mentioned.

Negation is decided per *clause* (a sentence cut at commas, semicolons, ``but``, ``and`` …): a
match is negated when a cue such as "not", "no", "without", "instead of" comes before it in its
clause, or a cue such as "is not needed", "out of scope", "deferred" comes after it. So
"real-time is not needed" and "no open registration" are negated, while "Supabase for real-time
subscriptions, not for auth" keeps "real-time" affirmed. This is a heuristic: double negation,
sarcasm, or negation carried across sentences are not understood.
"""

from __future__ import annotations

import re

from haytham.validate.text import normalize, sentences, term_set

_PRE_CUES = re.compile(
    r"\b(?:not|no|zero|never|without|nor|neither|none|nothing|nobody|instead of|rather than|avoids?|"
    r"avoiding|exclud(?:e|es|ed|ing)|except|drops?|dropped|skips?|skipped|defer(?:s|red)?|"
    r"postpone[sd]?|removes?|removed|disables?|disabled|forgo(?:es)?|lacks?|free of|"
    r"out of scope|outside (?:the )?scope|no need for|not needed|later version of|"
    r"turn(?:s|ed|ing)? off|switch(?:es|ed|ing)? off)\b"
)
_POST_CUES = re.compile(
    r"\b(?:not|unnecessary|unneeded|deferred|postponed|excluded|dropped|removed|disabled|"
    r"out of scope|post[\s\-]?mvp|not in (?:the )?mvp|not planned|avoided|omitted|ruled out|"
    r"later|v2|phase 2|never|off)\b"
)
_STRONG_PRE = re.compile(
    r"\b(?:not|no|never|without|nor|neither|none|instead of|rather than|"
    r"no need for|not needed)\b"
)
_STRONG_POST = re.compile(r"\b(?:not|unnecessary|unneeded|not needed|not required|never)\b")
_COPULA_END = re.compile(r"\b(?:is|are|was|were|be|been|remains?|stays?)\s*$")
_CLAUSE_SPLIT = re.compile(
    r"[,;:()\[\]\u2014\u2013]|\s-\s|\b(?:but|however|although|though|whereas|while|and|so|"
    r"beyond|except|other than|apart from|besides|"
    r"because|which|whereby|yet|plus|then)\b"
)


def clauses(sentence: str) -> list[str]:
    """Cut a normalized sentence at punctuation and conjunctions."""
    return [c.strip() for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip()]


def negated_at(clause: str, start: int, end: int) -> bool:
    """Whether the match ``clause[start:end]`` of a normalized clause is negated."""
    before, after = clause[:start], clause[end:]
    return bool(_PRE_CUES.search(before) or _POST_CUES.search(after))


def _normalized_clauses(text: str) -> list[str]:
    """Every clause of every sentence of ``text``, normalized."""
    return [c for sentence in sentences(text) for c in clauses(normalize(sentence))]


def _has_cue(text: str) -> bool:
    return bool(_PRE_CUES.search(text) or _POST_CUES.search(text))


def _matching_clauses(text: str, pattern: re.Pattern[str], *, negated: bool) -> list[str]:
    """Clauses where some match of ``pattern`` is negated (``negated=True``) or affirmed."""
    return [
        clause
        for clause in _normalized_clauses(text)
        if any(negated_at(clause, m.start(), m.end()) == negated for m in pattern.finditer(clause))
    ]


def affirmed_matches(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Clauses of ``text`` where ``pattern`` (run on normalized text) matches and is not negated."""
    return _matching_clauses(text, pattern, negated=False)


def is_negated_sentence(sentence: str) -> bool:
    """True when a negation cue occurs anywhere in the sentence (used for polarity only)."""
    return _has_cue(normalize(sentence))


def affirmed_terms(text: str, *, strong: bool = False) -> set[str]:
    """Stemmed terms of ``text`` that occur in at least one non-negated clause.

    ``strong=True`` only counts explicit negations ("not", "no", "without", "instead of",
    "not needed" …), not softer cues such as "later", "removes" or "except".
    """
    pre, post = (_STRONG_PRE, _STRONG_POST) if strong else (_PRE_CUES, _POST_CUES)
    out: set[str] = set()
    for clause in _normalized_clauses(text):
        cue = pre.search(clause)
        if cue or post.search(clause):
            # keep the words before a pre-cue only ("patients do not join live" keeps
            # "patients"); a copula before the cue ("real-time is not needed") or a post-cue
            # in the head negates the head too
            head = clause[: cue.start()] if cue else ""
            if post.search(head) or _COPULA_END.search(head):
                head = ""
            out |= term_set(head)
            continue
        out |= term_set(clause)
    return out


def affirmed_clauses(text: str) -> list[str]:
    """Normalized clauses of ``text`` that carry no negation cue at all."""
    return [clause for clause in _normalized_clauses(text) if not _has_cue(clause)]
