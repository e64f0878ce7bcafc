"""Column widths for the PDF reports' tables that fit their words (issue 28).

A narrow column used to break words in the middle ("Confiden ce", "Switchi ng", "mediu m").
:func:`fit_widths` widens each column to its longest word (capped, so a URL may still wrap),
takes the room from the columns with slack, and abbreviates a header word that alone would need
more room than the column's content; when the words cannot fit the portrait page at all, it
says so, and the table is set on a landscape page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

PADDING_PT = 12.0  # a cell's left and right padding (reportlab's default 6 pt each)
MAX_WORD_PT = 150.0  # a longer word (a URL, a hash) may wrap instead of widening its column
ABBREVIATIONS = {
    "Confidence": "Conf.",
    "Severity": "Sev.",
    "Switching cost": "Switch",
    "Switching": "Switch",
    "Likelihood": "Likel.",
    "Importance": "Import.",
    "Dependencies": "Deps",
    "Priority": "Prio.",
    "Difficulty": "Diff.",
}
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Fitted:
    """The widths (points), the headers as printed, and whether the table needs landscape."""

    widths: list[float]
    header: list[str]
    landscape: bool = False


def _longest(texts: Sequence[str], measure: Callable[[str], float]) -> float:
    words = [w for t in texts for w in _WORD.findall(t)]
    return min(max((measure(w) for w in words), default=0.0), MAX_WORD_PT)


def fit_widths(
    header: Sequence[str],
    columns: Sequence[Sequence[str]],
    widths: Sequence[float],
    available: float,
    measure: Callable[[str], float],
    measure_head: Callable[[str], float] | None = None,
    landscape_available: float | None = None,
) -> Fitted:
    """Widths for a table whose column ``c`` holds the texts ``columns[c]``: at least its
    longest word plus padding, the given ``widths`` where there is room, within ``available``.
    ``landscape`` when even the words alone do not fit (then fitted to
    ``landscape_available``)."""
    head_measure = measure_head or measure
    need = [_longest(col, measure) + PADDING_PT for col in columns]
    shown = list(header)
    for c, title in enumerate(header):
        room = max(need[c], widths[c])
        if title and _longest([title], head_measure) + PADDING_PT > room:
            shown[c] = ABBREVIATIONS.get(title, title)
        need[c] = max(need[c], _longest([shown[c]], head_measure) + PADDING_PT)
    # a column with nothing in it keeps only its header's room; the others share the rest
    empty = [not any(t.strip() for t in col) for col in columns]
    if any(empty) and not all(empty):
        freed = sum(w - n for w, n, e in zip(widths, need, empty, strict=True) if e and w > n)
        full = sum(w for w, e in zip(widths, empty, strict=True) if not e)
        widths = [
            min(w, n) if e else w + freed * w / full
            for w, n, e in zip(widths, need, empty, strict=True)
        ]
    landscape = sum(need) > available and landscape_available is not None
    room = landscape_available if landscape and landscape_available else available
    base = [w * room / sum(widths) for w in widths] if landscape else list(widths)
    out = [max(w, n) for w, n in zip(base, need, strict=True)]
    excess = sum(out) - room
    slack = [o - n for o, n in zip(out, need, strict=True)]
    if excess > 0 and sum(slack) > 0:
        share = min(1.0, excess / sum(slack))
        out = [o - s * share for o, s in zip(out, slack, strict=True)]
    return Fitted(out, shown, landscape)
