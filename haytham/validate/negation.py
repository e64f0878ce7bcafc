"""Negation and clauses: whether a term is affirmed or ruled out where it is mentioned.

Negation is decided per *clause* (a sentence cut at commas, semicolons, ``but``, ``and`` …): a
match is negated when a cue such as "not", "no", "without", "instead of" comes before it in its
clause, or a cue such as "is not needed", "out of scope", "deferred" comes after it. So
"real-time is not needed" and "no open registration" are negated, while "Supabase for real-time
subscriptions, not for auth" keeps "real-time" affirmed. This is a heuristic: double negation,
sarcasm, or negation carried across sentences are not understood.

Two constructions carry a negation *across* a clause cut (:func:`scoped_clauses`):

* a **negated list**: "No price, fee or payment step appears" is cut at the comma, but "no"
  governs the whole coordinated noun list; the clause after the comma inherits it when the one
  before is a bare noun phrase under a negative determiner ("no", "zero", "neither", "nor" and
  at most two words) and the list goes on at once ("fee or …": "or" / "nor" within its first
  three words) or ends with "and";
* a **noun list finished after a comma**: in "there is no field for a price, a payment or a
  fee" the clause after the comma is only the rest of the list ("a payment or a fee": noun
  phrases joined by "or", no verb), so the negation of the clause before reaches it;
* a **list of "any" phrases**: in "nowhere are there any prices, any means of payment or any
  buttons" the clauses after the comma open with "any", which needs the negation before them
  (they have no verb of their own: "no account is needed, any visitor can book" is affirmed);
* a **predicate list finished after a comma**: in "it never has to create an account, choose a
  password or supply an email address" the negated verb heads a list of predicates; the clause
  after the comma (at most eight words, coordinated by "or", no subject of its own) inherits a
  negation that governs a verb ("never", "not", "cannot"; not "no" or "without");
* a **restrictive relative clause of a negated noun**: in "there is no form through which
  anyone can enrol" the relative clause describes the form that does not exist, so it is
  negated too; a non-restrictive one ("no account, which makes sign-up fast") comments on the
  whole clause and is not.
"""

from __future__ import annotations

import re

from haytham.validate.text import normalize, sentences, term_set

_PRE_CUES = re.compile(
    r"\b(?:not|no|zero|never|nowhere|without|nor|neither|none|nothing|nobody|instead of|"
    r"rather than|avoids?|"
    r"avoiding|exclud(?:e|es|ed|ing)|except|drops?|dropped|skips?|skipped|defer(?:s|red)?|"
    r"postpone[sd]?|removes?|removed|disables?|disabled|forgo(?:es)?|lacks?|free of|"
    r"out of scope|outside (?:the )?scope|no need for|not needed|later version of|"
    r"turn(?:s|ed|ing)? off|switch(?:es|ed|ing)? off)\b"
)
_POST_CUES = re.compile(
    r"\b(?:not|unnecessary|unneeded|deferred|postponed|excluded|dropped|removed|disabled|"
    r"out of scope|post[\s\-]?mvp|not in (?:the )?mvp|not planned|avoided|omitted|ruled out|"
    r"later|v2|phase 2|never|off|impossible|not possible|prevented|refused|rejected|forbidden|"
    r"prohibited|disallowed|not allowed|not permitted)\b"
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
_SPLIT_KEEP = re.compile(f"({_CLAUSE_SPLIT.pattern})")
_WORD = r"[a-z0-9'\-]+"
# a bare noun phrase under a negative determiner closing a clause: "no price", "zero fees"
# (not "without": "Without login, members …" is a fronted adverbial, not a list head)
_NEG_LIST_HEAD = re.compile(rf"\b(?:no|nor|neither|zero)(?:\s+{_WORD}){{1,2}}$")
# a negated noun a relative clause can hang on: "no page on", "no form through", "no way"
_NEG_NOUN_END = re.compile(
    rf"\b(?:no|without|nor|never an?|not an?|not any)(?:\s+{_WORD}){{1,3}}?"
    rf"(?:\s+(?:on|in|through|by|with|via|from|for|to|at|of|under))?$"
)
# the noun list goes on right away: "fee or payment step appears …" ("or" within 3 words)
_LIST_GOES_ON = re.compile(rf"^(?:{_WORD}\s+){{1,2}}(?:or|nor)\b")


# a clause that is nothing but the rest of a noun list: "a payment or a fee", "fees nor tips"
_DET = r"(?:(?:an?|the|any)\s+)?"
_NOUN_LIST_REST = re.compile(
    rf"^{_DET}{_WORD}(?:\s+{_WORD})?\s+(?:or|nor)\s+{_DET}{_WORD}(?:\s+{_WORD})?$"
)


# the rest of a list of "any" phrases under a negation: "nowhere are there any prices, any means
# of payment or any buttons" ("any" needs the negation; no verb of its own)
_ANY_LIST_REST = re.compile(r"^(?:any|an?)\b.*\b(?:or|nor)\s+any\b")
_ANY_AFTER_AND = re.compile(r"^(?:(?:from|to|in|into|of|for|with|on|by) )?any\b")
_FINITE = re.compile(r"\b(?:can|may|will|must|should|is|are|was|were|has|have|does|do)\b")


# a negation that governs a verb: "never has to create …", "cannot …" (not "no" or "without",
# whose scope is a noun phrase or a fronted adverbial)
_VERB_NEGATION = re.compile(
    r"\b(?:not|never|cannot|can't|won't|don't|doesn't|didn't|isn't|aren't|neither|nor)\b"
)
# a clause that opens with its own subject or a determiner is not the rest of a predicate list
_OWN_SUBJECT = re.compile(
    r"^(?:i|you|he|she|it|we|they|anyone|anybody|everyone|everybody|someone|somebody|nobody|"
    r"the|a|an|each|every|any|all|some|this|that|these|those|there)\b"
)


def _predicate_list_rest(clause: str) -> bool:
    """ "…, choose a password or supply an email address": the rest of a list of predicates
    (at most eight words, coordinated by "or"/"nor", no subject of its own)."""
    words = clause.rstrip(".!?").split()
    return (
        0 < len(words) <= 8
        and any(w in ("or", "nor") for w in words[1:])
        and not _OWN_SUBJECT.match(clause)
    )


def _bare(clause: str) -> bool:
    """A list item without a verb of its own: at most two words."""
    return len(clause.split()) <= 2


def scoped_clauses(sentence: str) -> list[tuple[str, bool]]:
    """The clauses of a normalized sentence, each with whether a negation from the clause
    before reaches it as a whole (see the module docstring: a negated list, a restrictive
    relative clause of a negated noun)."""
    parts = _SPLIT_KEEP.split(sentence)
    out: list[tuple[str, bool]] = []
    seps: list[str] = []
    for i, part in enumerate(parts):
        if i % 2:  # a separator (the capture group of the split)
            seps.append(part.strip())
            continue
        clause = part.strip()
        if not clause:
            continue
        inherited = False
        if out:
            prev, prev_inherited = out[-1]
            head = bool(_NEG_LIST_HEAD.search(prev)) or (prev_inherited and _bare(prev))
            if seps in ([","], ["and"]):
                inherited = head and (
                    seps == ["and"] or _bare(clause) or bool(_LIST_GOES_ON.search(clause))
                )
                # "no field for a price, a payment or a fee": the negated clause's last noun
                # starts a list that the next clause finishes without a verb of its own
                inherited = inherited or (
                    seps == [","]
                    and bool(_NOUN_LIST_REST.match(clause.rstrip(".!?")))
                    and (prev_inherited or bool(_PRE_CUES.search(prev)))
                )
                # "nowhere are there any prices, any means of payment or any buttons …";
                # "exclude the folder from backups and any cloud sync"
                inherited = inherited or (
                    (
                        (seps == [","] and bool(_ANY_LIST_REST.match(clause)))
                        or (seps == ["and"] and bool(_ANY_AFTER_AND.match(clause)))
                    )
                    and not _FINITE.search(clause)
                    and (prev_inherited or bool(_PRE_CUES.search(prev)))
                )
                # "it never has to create an account, choose a password or supply an email":
                # the verb the negation governs heads a list of predicates
                inherited = inherited or (
                    seps == [","]
                    and _predicate_list_rest(clause)
                    and (prev_inherited or bool(_VERB_NEGATION.search(prev)))
                )
            elif seps in (["which"], ["whereby"]):  # restrictive: no comma before it
                inherited = bool(_NEG_NOUN_END.search(prev)) or (prev_inherited and _bare(prev))
        out.append((clause, inherited))
        seps = []
    return out


def negated_at(clause: str, start: int, end: int) -> bool:
    """Whether the match ``clause[start:end]`` of a normalized clause is negated."""
    before, after = clause[:start], clause[end:]
    return bool(_PRE_CUES.search(before) or _POST_CUES.search(after))


def _normalized_clauses(text: str) -> list[tuple[str, bool]]:
    """Every clause of every sentence of ``text``, normalized, with its inherited negation."""
    return [c for sentence in sentences(text) for c in scoped_clauses(normalize(sentence))]


def _has_cue(text: str) -> bool:
    return bool(_PRE_CUES.search(text) or _POST_CUES.search(text))


def _matching_clauses(text: str, pattern: re.Pattern[str], *, negated: bool) -> list[str]:
    """Clauses where some match of ``pattern`` is negated (``negated=True``) or affirmed."""
    return [
        clause
        for clause, inherited in _normalized_clauses(text)
        if any(
            (inherited or negated_at(clause, m.start(), m.end())) == negated
            for m in pattern.finditer(clause)
        )
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
    for clause, inherited in _normalized_clauses(text):
        if inherited:
            continue
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
    return [
        clause
        for clause, inherited in _normalized_clauses(text)
        if not inherited and not _has_cue(clause)
    ]
