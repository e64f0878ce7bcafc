"""Checks on the founder's idea text before anything is created."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

from haytham.errors import InputError
from haytham.stages.mvp_scope import APPETITES
from haytham.storage.folder import read_capped

MIN_WORDS = 10
MAX_CHARS = 20_000


# Scripts written without spaces between words: a run of their characters is measured at one
# word per WORD_CHARS characters (a common rule of thumb for Chinese and Japanese text).
_UNSPACED = re.compile(
    r"[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff"
    r"\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    r"\uff66-\uff9f\U00020000-\U0003134f]+"
)
WORD_CHARS = 2

# Characters that are not Cf or whitespace yet show nothing: Unicode's other default-ignorable
# code points (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and
# other variation selectors, tags) and the blank Braille pattern.
_BLANK = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0000-\U000e0fff]"
)


def _invisible(c: str) -> bool:
    """Whitespace, a format character (category Cf: zero-width space and joiners, word joiner,
    BOM, bidi marks) or another character that shows nothing (see ``_BLANK``)."""
    return c.isspace() or unicodedata.category(c) == "Cf" or bool(_BLANK.match(c))


def _visible_word(token: str) -> bool:
    """A space-separated token is a word when it has a character that is not a combining mark."""
    return any(not unicodedata.category(c).startswith("M") for c in token)


def count_words(text: str) -> int:
    """Words in ``text``, Unicode-aware.

    The rule: invisible characters (whitespace, Cf format characters such as U+200B, U+200C,
    U+200D, U+2060 and U+FEFF, and other blank default-ignorables) separate words like spaces
    do. A run of CJK ideographs, kana, Hangul, Thai, Lao, Khmer or Myanmar characters counts one
    word per :data:`WORD_CHARS` characters, rounded up (so about one word per two CJK
    characters), since those scripts do not put spaces between words. Every other
    space-separated token is one word if it has a character that is not a combining mark.
    """
    spaced = "".join(" " if _invisible(c) else c for c in text)
    total = 0
    for token in spaced.split():
        runs = _UNSPACED.findall(token)
        rest = [t for t in _UNSPACED.sub(" ", token).split() if _visible_word(t)]
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
        raw = read_capped(path, limit)
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if raw is None:
        raise InputError(
            f"{path} is larger than an idea can be ({MAX_CHARS:,} characters); shorten it."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; save it as UTF-8 and try again.") from None
    return validate_idea(text)


def validate_appetite(appetite: str | None) -> str | None:
    """The appetite in lower case, ``None`` when not given, or one sentence naming the allowed ones."""
    if appetite is None or appetite == "":
        return None
    value = appetite.strip().lower()
    if value not in APPETITES:
        raise InputError(f"Appetite must be one of {', '.join(APPETITES)}, not {appetite!r}.")
    return value
