"""Numbers with meaning: money, percentages and counts pulled out of claim statements.

Each :class:`Quantity` keeps its value in base units (``$4.3B`` → 4.3e9), a kind, an optional
period ("per month"), the counted noun, and the terms around it (its *topic*), so two statements
about the same quantity can be compared and a tool result can be searched for a number however
it is written ("$4.3 billion", "4.3bn", "4,300,000,000").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from haytham.validate.text import number_words, stem, terms

_SCALE = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mm": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "billions": 1e9,
    "t": 1e12,
    "tn": 1e12,
    "trillion": 1e12,
}
_UNIT_LETTERS = frozenset({"m", "b", "t", "k"})
"""Scales written as one letter: "10m" is ten million, or ten metres or minutes ("under-10m
boats", "a 10m walk"), so the number as written is a reading too."""
_NUM = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_SCALE_RE = r"(?:\s?(?P<scale>thousand|millions?|billions?|trillion|bn|mm|mn|tn|k|m|b|t)\b)?"
_PERIOD = (
    r"(?:\s?(?:/|per|a|an|each)\s?(?P<period>month|mo|year|yr|annum|week|day|user|seat|"
    r"order|session|portion|meal|request|call|hour))?"
)
_MONEY = re.compile(
    r"(?P<cur>[$€£¥]|\busd\s?|\beur\s?|\bgbp\s?)"
    + _NUM
    + _SCALE_RE
    + _PERIOD
    + r"|"
    + _NUM.replace("num", "num2")
    + _SCALE_RE.replace("scale", "scale2")
    + r"\s?(?P<cur2>usd|dollars|euros?|eur|gbp|pounds)\b"
    + _PERIOD.replace("period", "period2"),
    re.IGNORECASE,
)
_PERCENT = re.compile(_NUM + r"\s?(?:%|percent\b|per cent\b)", re.IGNORECASE)
_COUNT = re.compile(_NUM + _SCALE_RE + r"\+?\s+(?P<noun>[a-z][a-z\-]{2,})", re.IGNORECASE)
_PERIODS = {"mo": "month", "yr": "year", "annum": "year"}

MARKET_WORDS = frozenset(
    stem(w)
    for w in (
        "market",
        "tam",
        "sam",
        "som",
        "industry",
        "sector",
        "spend",
        "spending",
        "worth",
        "valued",
    )
)
PRICE_WORDS = frozenset(
    stem(w)
    for w in (
        "price",
        "pricing",
        "cost",
        "fee",
        "fees",
        "subscription",
        "plan",
        "charge",
        "charges",
    )
)
_QUALIFIER_GROUPS = (
    frozenset({"tam", "sam", "som", "total", "serviceable", "obtainable", "addressable"}),
    frozenset(
        {
            "global",
            "worldwide",
            "us",
            "usa",
            "uk",
            "eu",
            "europe",
            "european",
            "german",
            "germany",
            "france",
            "north",
            "american",
            "america",
            "asia",
            "india",
            "canada",
            "australia",
            "local",
            "city",
            "regional",
            "national",
        }
    ),
)
_UNIT_NOUNS_SKIP = frozenset(
    {
        "of",
        "per",
        "percent",
        "and",
        "or",
        "to",
        "in",
        "the",
        "year",
        "years",
        "month",
        "months",
        "week",
        "weeks",
        "day",
        "days",
        "hour",
        "hours",
        "minute",
        "minutes",
        "second",
        "seconds",
        "x",
        "times",
    }
)


@dataclass(frozen=True)
class Quantity:
    """One number a text states, with what it measures: kind, period, counted noun, topic terms."""

    kind: str  # money | percent | count
    value: float
    period: str | None
    noun: str | None
    topic: frozenset[str]
    text: str
    written: float | None = None
    """The number as written, where its scale is one letter that can also be a unit ("10m")."""

    def readings(self) -> tuple[float, ...]:
        """Every value the text can mean: in base units, and as written for "10m"."""
        return (self.value,) if self.written is None else (self.value, self.written)

    def qualifiers(self) -> list[frozenset[str]]:
        """Its topic terms in each qualifier group (TAM/SAM/SOM, region…), one set per group."""
        return [self.topic & g for g in _QUALIFIER_GROUPS]


def _value(num: str, scale: str | None) -> float:
    value = float(num.replace(",", ""))
    return value * _SCALE.get((scale or "").lower(), 1.0)


def _topic(text: str, start: int, end: int) -> frozenset[str]:
    before = text[:start].split()[-8:]
    after = text[end:].split()[:8]
    window = " ".join(before + after)
    years = {f"y{y}" for y in re.findall(r"\b(?:19|20)\d\d\b", window)}
    return frozenset(t for t in terms(window) if not t[0].isdigit()) | years


def _written(num: str, scale: str | None) -> float | None:
    return float(num.replace(",", "")) if (scale or "").lower() in _UNIT_LETTERS else None


def _is_year(num: str, scale: str | None) -> bool:
    return scale is None and re.fullmatch(r"(?:19|20)\d\d", num) is not None


_SPACED_GROUPS = re.compile(r"\b\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+\b")


def _comma_groups(text: str) -> str:
    """Thousands written with (thin) spaces, "18 820", as "18,820" (one notation to parse)."""
    return _SPACED_GROUPS.sub(lambda m: re.sub(r"[ \u00a0\u2009\u202f]", ",", m.group(0)), text)


def extract(text: str) -> list[Quantity]:
    """All quantities in ``text`` (years such as 2024 are not quantities)."""
    text = _comma_groups(text)
    out: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for m in _MONEY.finditer(text):
        num, scale = m.group("num") or m.group("num2"), m.group("scale") or m.group("scale2")
        period = m.group("period") or m.group("period2")
        period = _PERIODS.get(period.lower(), period.lower()) if period else None
        out.append(
            Quantity(
                "money",
                _value(num, scale),
                period,
                None,
                _topic(text, m.start(), m.end()),
                m.group(0).strip(),
            )
        )
        taken.append(m.span())
    for m in _PERCENT.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        out.append(
            Quantity(
                "percent",
                float(m.group("num").replace(",", "")),
                None,
                None,
                _topic(text, m.start(), m.end()),
                m.group(0).strip(),
            )
        )
        taken.append(m.span())
    for m in _COUNT.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        num, scale, noun = m.group("num"), m.group("scale"), m.group("noun").lower()
        if _is_year(num, scale) or noun in _UNIT_NOUNS_SKIP:
            continue
        out.append(
            Quantity(
                "count",
                _value(num, scale),
                None,
                stem(noun),
                _topic(text, m.start(), m.end()),
                m.group(0).strip(),
                _written(num, scale),
            )
        )
    return out


def numbers(text: str) -> list[float]:
    """Every number in ``text`` in base units, plus the bare numbers and the numbers written as
    words ("one a fortnight"), for lenient matching."""
    text = _comma_groups(text)
    out: list[float] = number_words(text)
    for q in extract(text):
        out.append(q.value)
    for m in re.finditer(_NUM + _SCALE_RE, text, re.IGNORECASE):
        out.append(_value(m.group("num"), m.group("scale")))
        out.append(float(m.group("num").replace(",", "")))
    return out


def close(a: float, b: float, tolerance: float) -> bool:
    """Whether ``a`` and ``b`` differ by at most ``tolerance`` of the larger magnitude."""
    if a == b:
        return True
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def _years(topic: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in topic if re.fullmatch(r"y\d{4}", t))


def category(q: Quantity) -> str | None:
    """``"price"`` or ``"market"`` for an amount of money whose period or topic says which;
    ``None`` otherwise."""
    if q.kind != "money":
        return None
    if q.period or q.topic & PRICE_WORDS:
        return "price"
    if q.topic & MARKET_WORDS:
        return "market"
    return None


def same_quantity(a: Quantity, b: Quantity) -> bool:
    """Whether two statements plausibly measure the same thing (kind, unit, topic, qualifiers)."""
    if a.kind != b.kind or (a.period or None) != (b.period or None):
        return False
    for qa, qb in zip(a.qualifiers(), b.qualifiers(), strict=True):
        if qa and qb and qa != qb:
            return False
    ya, yb = _years(a.topic), _years(b.topic)
    if ya and yb and ya != yb:
        return False
    union = (a.topic | b.topic) - _years(a.topic | b.topic)
    jaccard = len((a.topic & b.topic) & union) / len(union) if union else 0.0
    if a.kind == "money":
        ca, cb = category(a), category(b)
        if ca and ca == cb:
            return True
        return jaccard >= 0.5
    if a.kind == "count":
        return a.noun == b.noun and jaccard >= 0.4
    return jaccard >= 0.5
