"""Lexical tools shared by the validators: normalisation, key terms, sentences, segments.

Text is lower-cased and known phrase variants are unified ("real-time" → "realtime"); terms are
stemmed content words. Sentences split prose and markdown (bullets become sentences, a line that
continues the previous sentence is re-joined); markdown sections under headings like "Out of
scope" or "Non-goals" are marked excluded. Negation lives in :mod:`haytham.validate.negation`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"\breal[\s\-_]?time\b", "realtime"),
        (r"\bsign[\s\-_]?ups?\b", "signup"),
        (
            r"\bself[\s\-_]?(?:serv(?:e|ice)\s+)?(?:registration|sign[\s\-]?up|signup)\b",
            "selfregistration",
        ),
        (r"\binvite[\s\-_]?only\b", "inviteonly"),
        (r"\bweb[\s\-_]?sockets?\b", "websocket"),
        (r"\be[\s\-]mail\b", "email"),
        (r"\bnon[\s\-]", "non"),
        (r"\bcan't\b|\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"n't\b", " not"),
        # "realtime: false" / "payments = none" style statements read as a negation
        # (?<![\w\-]) rather than \b: a match starts at a word's start (linear on long words)
        (r"(?<![\w\-])([a-z_][\w\-]*)\s*[:=]\s*(?:false|none|no)\b", r"no \1"),
    )
)

_NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "single": "1",
    "solo": "1",
}

_NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def number_words(text: str) -> list[float]:
    """The numbers ``text`` writes as words ("one a fortnight", "twelve ringers")."""
    return [float(_NUMBER_WORDS[m.group(1).lower()]) for m in _NUMBER_WORD_RE.finditer(text)]


STOPWORDS = frozenset(
    (
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "per",
        "via",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "their",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "mine",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "not",
        "no",
        "nor",
        "so",
        "than",
        "then",
        "too",
        "very",
        "just",
        "only",
        "also",
        "any",
        "all",
        "each",
        "every",
        "some",
        "such",
        "own",
        "same",
        "other",
        "more",
        "most",
        "less",
        "least",
        "few",
        "many",
        "much",
        "both",
        "either",
        "neither",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "about",
        "above",
        "below",
        "between",
        "through",
        "during",
        "before",
        "after",
        "up",
        "down",
        "out",
        "off",
        "again",
        "further",
        "once",
        "here",
        "s",
        "t",
        "etc",
        "e",
        "g",
        "ie",
        "eg",
        "vs",
        "via",
        "using",
        "use",
        "used",
        "uses",
        "within",
        "without",
        "while",
        "new",
        "one",
        "true",
        "false",
        "yes",
        "none",
        "never",
    )
)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])|\n+")
_SOFT_WRAP = re.compile(r"^(?!\s*#)(.*[^:*\s])[ \t]*\n[ \t]*(?=[a-z])", re.MULTILINE)
_MD_NOISE = re.compile(r"[*_`>#|]+")
_EXCLUDED_HEADING = re.compile(
    r"\b(?:out of scope|out-of-scope|not in scope|non[\s\-]?goals?|excluded|deferred|"
    r"later|future|won'?t do|will not|alternatives? (?:considered|rejected)|rejected)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


@lru_cache(maxsize=16384)
def normalize(text: str) -> str:
    """Lower-case ``text`` and rewrite known phrase variants ("real-time" → "realtime").

    Pure, so memoised (like ``stem`` and ``terms``): a session's validators normalise the same
    few hundred sentences thousands of times (a process-wide cache of values, not state).
    """
    out = text.lower().replace("\u2019", "'")
    for pattern, repl in _PHRASES:
        out = pattern.sub(repl, out)
    return out


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A tiny suffix stripper, applied identically to both sides of every comparison."""
    w = _NUMBER_WORDS.get(word, word)
    if w.isdigit() or len(w) <= 3:
        return w
    for suffix, repl, min_len in (
        ("ies", "y", 5),
        ("sses", "ss", 5),
        ("ments", "", 8),
        ("ment", "", 7),
        ("ing", "", 6),
        ("ed", "", 5),
        ("ers", "er", 5),
        ("es", "e", 5),
        ("s", "", 4),
    ):
        if w.endswith(suffix) and len(w) >= min_len and not w.endswith("ss"):
            base = w[: len(w) - len(suffix)] + repl
            if (
                suffix in ("ing", "ed")
                and len(base) > 3
                and base[-1] == base[-2]
                and base[-1] not in "lsz"
            ):
                base = base[:-1]
            return base
    return w


def words(text: str) -> list[str]:
    """The normalised words of ``text`` in order (unstemmed, stopwords kept)."""
    return _WORD.findall(normalize(text))


def terms(text: str) -> list[str]:
    """Stemmed content words of ``text`` in order (stopwords removed, numbers as digits)."""
    return list(_terms(text))


@lru_cache(maxsize=16384)
def _terms(text: str) -> tuple[str, ...]:
    out = []
    for w in words(text):
        s = stem(w)
        if s not in STOPWORDS and w not in STOPWORDS and (len(s) > 1 or s.isdigit()):
            out.append(s)
    return tuple(out)


def term_set(text: str) -> set[str]:
    """The distinct :func:`terms` of ``text``."""
    return set(_terms(text))


def clean_markdown(text: str) -> str:
    """``text`` with markdown emphasis, code, quote, heading and table marks replaced by spaces."""
    return _MD_NOISE.sub(" ", text)


def unwrap(text: str) -> str:
    """Re-join hard-wrapped lines: a line break followed by a lower-case word continues the
    sentence ("neighbours within\nabout 2 km" is one sentence); bullets, lines that start
    with a capital or a digit, and lines after a heading or a label ("Out of scope:") stay
    separate."""
    return _SOFT_WRAP.sub(r"\1 ", text)


def sentences(text: str) -> list[str]:
    """Split prose or markdown into trimmed sentences/lines (bullets become sentences)."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    out = []
    for part in _SENTENCE_SPLIT.split(unwrap(text)):
        part = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", part)
        part = " ".join(clean_markdown(part).split())
        if len(part) >= 3 and re.search(r"[A-Za-z]", part):
            out.append(part)
    return tuple(out)


def clear_caches() -> None:
    """Forget memoised results (benchmarks time validation from a cold start)."""
    for fn in (normalize, stem, _terms, _sentences):
        fn.cache_clear()


@dataclass(frozen=True)
class Segment:
    """A sentence of a stage's text; ``excluded`` under an "Out of scope"-like heading."""

    text: str
    excluded: bool = False


def markdown_segments(text: str) -> list[Segment]:
    """Sentences of a markdown document, tracking whether each is under an excluding heading."""
    out: list[Segment] = []
    excluded_level: int | None = None
    for line in unwrap(text).splitlines():
        heading = re.match(r"^\s*(#{1,6})\s+(.*)$", line)
        bold = re.match(r"^\s*\*\*([^*]+)\*\*:?\s*$", line)
        if heading or bold:
            level = len(heading.group(1)) if heading else 7
            title = heading.group(2) if heading else (bold.group(1) if bold else "")
            if excluded_level is not None and level <= excluded_level:
                excluded_level = None
            if _EXCLUDED_HEADING.search(title):
                excluded_level = level
            continue
        label = re.match(r"^\s*(?:[-*+]\s*)?\**([A-Za-z][\w\s\-]{2,30}?)\**\s*:\s+(.*)$", line)
        inline_excluded = bool(label and _EXCLUDED_HEADING.search(label.group(1)))
        for s in sentences(line):
            out.append(Segment(s, excluded_level is not None or inline_excluded))
    return out


def strings_of(value: Any, *, skip: Iterable[str] = ()) -> Iterator[str]:
    """Every string leaf of a pydantic model / dict / list (keys in ``skip`` are not entered)."""
    skipped = set(skip)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in skipped:
                yield from strings_of(v, skip=skipped)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings_of(v, skip=skipped)


def snake(name: str) -> str:
    """Lower-case ``name`` with each run of other characters as one underscore ("Group
    structure" → ``group_structure``)."""
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def short(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis, for messages."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
