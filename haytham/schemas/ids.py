"""Item ids and references between items, owned by code (weak models are users too).

A model may number ``SCOPE-1, SCOPE-1, SCOPE-2``, write ``scope-01`` or ``Story 3``, leave an id
out, or reference a capability by its name. None of that is a reason to reject an answer:

- :func:`renumber` gives every item of a list a well-formed id that is unique in the answer,
  keeping each first well-formed id as written and numbering the rest after the highest one;
- :func:`relink` maps each reference to a known id (case, padding and separators, an id
  followed by its title, or the title alone) and keeps a reference that names nothing as written,
  so the stage's check reports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

_NON_ALNUM = re.compile(r"[^A-Z0-9]+")
# Letter groups need a separator between them, so a long run of words without a digit fails in
# linear time (``(?:[\s_\-]*[A-Za-z]+)*`` backtracked exponentially on a sentence: a ReDoS).
_LEADING_ID = re.compile(r"^\s*([A-Za-z]+(?:[\s_\-]+[A-Za-z]+)*[\s_\-]*\d+)\b")
_LEADING_ID_SPAN = 40  # an id at the start of a reference is short


def as_refs(value: object) -> object:
    """A weak model's single reference (``"CAP-F-001"``, ``"CAP-F-001, CAP-F-002"``, ``3``) or
    ``null`` as a list of strings."""
    if value is None:
        return []
    if isinstance(value, str | int) and not isinstance(value, bool):
        return [p.strip() for p in str(value).split(",") if p.strip()]
    if isinstance(value, list):
        return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    return value


Refs = Annotated[list[str], BeforeValidator(as_refs)]
"""A list of references to other items' ids, repaired by :func:`relink` after parsing."""


def id_pattern(prefix: str, width: int) -> str:
    """The JSON-schema pattern that guides a model (parsing itself never enforces it)."""
    return f"^{re.escape(prefix)}\\d{{{width}}}$" if width else f"^{re.escape(prefix)}\\d+$"


@dataclass(frozen=True)
class IdScheme:
    """Ids like ``SCOPE-1`` (``prefix="SCOPE-"``) or ``CAP-F-001`` (``width=3``)."""

    prefix: str
    width: int = 0

    def format(self, number: int) -> str:
        """The id of ``number`` in this scheme, zero-padded to ``width`` (3 → ``CAP-F-003``)."""
        return f"{self.prefix}{number:0{self.width}d}"

    def number(self, raw: object) -> int | None:
        """The number ``raw`` spells in this scheme (``"cap_f_01"`` → 1), else ``None``."""
        if isinstance(raw, bool) or raw is None:
            return None
        if isinstance(raw, int):
            return raw if raw > 0 else None
        text = _NON_ALNUM.sub("", str(raw).upper())
        match = re.fullmatch(r"([A-Z]*?)(\d+)", text)
        if match is None:
            return None
        letters, digits = match.groups()
        wanted = _NON_ALNUM.sub("", self.prefix.upper())
        if letters not in ("", wanted):
            return None
        return int(digits) or None

    def canonical(self, raw: object) -> str | None:
        """``raw`` spelled as this scheme spells it (``"scope_01"`` → ``SCOPE-1``), else None."""
        number = self.number(raw)
        return None if number is None else self.format(number)

    def fresh(self, used: Iterable[str]) -> str:
        """The id after the highest one in ``used``."""
        numbers = [n for n in (self.number(u) for u in used) if n is not None]
        return self.format(max(numbers, default=0) + 1)


@dataclass(frozen=True)
class DecisionIds:
    """``DEC-<CATEGORY>-nnn`` (``dec_auth_1`` → ``DEC-AUTH-001``); a fresh id is ``DEC-GEN-nnn``."""

    prefix: str = "DEC"
    width: int = 3
    fallback: str = "GEN"

    def canonical(self, raw: object) -> str | None:
        """``raw`` as ``DEC-<CATEGORY>-nnn`` (a missing category is ``GEN``), else None."""
        if not isinstance(raw, str):
            return None
        parts = [p for p in _NON_ALNUM.split(raw.upper()) if p]
        if len(parts) >= 2 and parts[0] == self.prefix and parts[-1].isdigit():
            category = "".join(parts[1:-1]) or self.fallback
            return f"{self.prefix}-{category}-{int(parts[-1]):0{self.width}d}"
        return None

    def fresh(self, used: Iterable[str]) -> str:
        """The ``DEC-GEN-nnn`` after the highest ``DEC-GEN`` id in ``used``."""
        numbers = [
            int(u.rsplit("-", 1)[1])
            for u in used
            if u.startswith(f"{self.prefix}-{self.fallback}-") and u.rsplit("-", 1)[1].isdigit()
        ]
        return f"{self.prefix}-{self.fallback}-{max(numbers, default=0) + 1:0{self.width}d}"


def renumber(items: Sequence[Any], scheme: IdScheme | DecisionIds, field: str = "id") -> None:
    """Give each item a unique id in ``scheme``, in place: the first well-formed spelling of an
    id keeps it (canonicalised); a missing, malformed or repeated id gets a fresh one."""
    used: set[str] = set()
    keep: list[str | None] = []
    for item in items:
        canonical = scheme.canonical(getattr(item, field))
        keep.append(canonical if canonical is not None and canonical not in used else None)
        if keep[-1] is not None:
            used.add(canonical)  # type: ignore[arg-type]
    for item, canonical in zip(items, keep, strict=True):
        if canonical is None:
            canonical = scheme.fresh(used)
            used.add(canonical)
        setattr(item, field, canonical)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def relink(
    refs: Iterable[object],
    known: Mapping[str, str],
    schemes: Sequence[IdScheme | DecisionIds] = (),
) -> list[str]:
    """``refs`` spelled as ids from ``known`` (id → title), in order and once each.

    Tried in turn: the exact id; the id in any of ``schemes`` (``cap-f-1`` → ``CAP-F-001``); an
    id at the start (``"SCOPE-2: Invite a member"``); the title, exactly or as the only title
    containing it (or contained in it). A reference that matches nothing is kept as written.
    """
    by_upper = {k.upper(): k for k in known}
    by_title: dict[str, str] = {}
    for key, title in known.items():
        by_title.setdefault(_norm(title), key)
    out: list[str] = []
    for ref in refs:
        found = _resolve(str(ref), known, by_upper, by_title, schemes)
        value = found if found is not None else str(ref)
        if value not in out:
            out.append(value)
    return out


def _resolve(
    ref: str,
    known: Mapping[str, str],
    by_upper: Mapping[str, str],
    by_title: Mapping[str, str],
    schemes: Sequence[IdScheme | DecisionIds],
) -> str | None:
    text = ref.strip()
    if text in known:
        return text
    candidates = [text]
    lead = _LEADING_ID.match(text[:_LEADING_ID_SPAN])
    if lead is not None:
        candidates.append(lead.group(1))
    for candidate in candidates:
        if candidate.upper() in by_upper:
            return by_upper[candidate.upper()]
        for scheme in schemes:
            canonical = scheme.canonical(candidate)
            if canonical is not None and canonical in known:
                return canonical
    norm = _norm(text)
    if not norm:
        return None
    if norm in by_title:
        return by_title[norm]
    if len(norm) >= 4:
        hits = {
            key for title, key in by_title.items() if title and (norm in title or title in norm)
        }
        if len(hits) == 1:
            return hits.pop()
    return None
