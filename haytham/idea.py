"""Checks on the founder's idea text before anything is created."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from haytham.errors import InputError

MIN_WORDS = 10
MAX_CHARS = 20_000
APPETITES = ("small", "medium", "large")


def validate_idea(text: str) -> str:
    """Return the cleaned idea or raise :class:`InputError` with what to change."""
    if not isinstance(text, str):
        raise InputError("The idea must be text.")
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
    if not cleaned:
        raise InputError("The idea is empty; describe what you want to build.")
    if len(cleaned) > MAX_CHARS:
        raise InputError(
            f"The idea is {len(cleaned):,} characters; the limit is {MAX_CHARS:,}. "
            "Shorten it to the essentials."
        )
    words = len(cleaned.split())
    if words < MIN_WORDS:
        raise InputError(
            f"The idea has {words} word{'s' if words != 1 else ''}; "
            f"write at least {MIN_WORDS}: who it is for, what they do, and why."
        )
    return cleaned


def read_idea_file(path: Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read {path}: {exc.strerror or exc}.") from None
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
