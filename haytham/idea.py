"""Checks on the founder's idea text before anything is created."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

from haytham.errors import InputError

MIN_WORDS = 10
MAX_CHARS = 20_000
APPETITES = ("small", "medium", "large")


# Scripts written without spaces between words: a run of their characters is measured at one
# word per WORD_CHARS characters (a common rule of thumb for Chinese and Japanese text).
_UNSPACED = re.compile(
    r"[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    r"\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
WORD_CHARS = 2


def _invisible(c: str) -> bool:
    """Whitespace, or a format character that shows nothing (zero-width space, joiners, BOM)."""
    return c.isspace() or unicodedata.category(c) == "Cf"


def count_words(text: str) -> int:
    """Words in ``text``, Unicode-aware.

    Invisible characters separate words like spaces do. A run of CJK, kana, Hangul, Thai, Lao,
    Khmer or Myanmar characters counts one word per :data:`WORD_CHARS` characters (rounded up),
    since those scripts do not put spaces between words; other words are space-separated.
    """
    spaced = "".join(" " if _invisible(c) else c for c in text)
    total = 0
    for token in spaced.split():
        runs = _UNSPACED.findall(token)
        rest = _UNSPACED.sub(" ", token).split()
        total += len(rest) + sum(math.ceil(len(r) / WORD_CHARS) for r in runs)
    return total


def validate_idea(text: str) -> str:
    """Return the cleaned idea or raise :class:`InputError` with what to change."""
    if not isinstance(text, str):
        raise InputError("The idea must be text.")
    if any(unicodedata.category(c) == "Cs" for c in text):  # undecodable bytes from the shell
        raise InputError("The idea is not valid UTF-8 text; paste or save it as UTF-8.")
    if "\x00" in text:
        raise InputError("The idea contains a NUL character; paste plain text.")
    bad = sorted(
        {f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cc" and c not in "\n\r\t"}
    )
    if bad:
        raise InputError(
            f"The idea contains control characters ({', '.join(bad[:5])}); paste plain text."
        )
    cleaned = text.replace("\r\n", "\n").strip()
    if not any(not _invisible(c) for c in cleaned):
        raise InputError("The idea is empty; describe what you want to build.")
    if len(cleaned) > MAX_CHARS:
        raise InputError(
            f"The idea is {len(cleaned):,} characters; the limit is {MAX_CHARS:,}. "
            "Shorten it to the essentials."
        )
    words = count_words(cleaned)
    if words < MIN_WORDS:
        raise InputError(
            f"The idea has {words} word{'s' if words != 1 else ''}; "
            f"write at least {MIN_WORDS}: who it is for, what they do, and why."
        )
    return cleaned


def read_idea_file(path: Path) -> str:
    """The idea in a UTF-8 file, read no further than the longest idea could be."""
    limit = MAX_CHARS * 4  # UTF-8 needs at most 4 bytes a character
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if len(raw) > limit:
        raise InputError(
            f"{path} is larger than an idea can be ({MAX_CHARS:,} characters); shorten it."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; save it as UTF-8 and try again.") from None
    return validate_idea(text)


def validate_appetite(appetite: str | None) -> str | None:
    if appetite is None or appetite == "":
        return None
    value = appetite.strip().lower()
    if value not in APPETITES:
        raise InputError(f"Appetite must be one of {', '.join(APPETITES)}, not {appetite!r}.")
    return value
