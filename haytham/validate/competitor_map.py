"""Competitor map use (issue 25): the map market-context draws is what the WHY phase argues with.

Code relinks first (:func:`haytham.stages.market_context.cite_competitors`: ids in any spelling,
names and the names in a competitor's parenthesis found in a risk's or a score's own words); this
check reports what is still missing, as second opinions (``info``: a quality flag shown at the
gate and in the exports, never a decision and never a drift):

* a competitor row that does not say the job it does (for whom) or the gap this idea uses (the
  row shows "not stated" instead of a blank);
* a risk or scorecard dimension that speaks of competition (competitors, alternatives, rivals,
  switching, differentiation) and cites no ``COMP-nn`` id;
* risk-assessment or validation-summary citing none of the map's competitors at all.

Cannot catch: a citation of the wrong competitor, or competition described in other words.
"""

from __future__ import annotations

import re

from haytham.stages import market_context, risk_assessment, validation_summary
from haytham.validate.common import Context, finding
from haytham.validate.model import COMPETITOR_MAP, Finding
from haytham.validate.text import short

NAME = COMPETITOR_MAP

_COMPETITIVE = re.compile(
    r"\b(?:competit\w*|alternatives?|incumbents?|rivals?|substitut\w*|differentiat\w*|"
    r"switch\w*)\b",
    re.IGNORECASE,
)


def _uncited(slug: str, rows: list[tuple[str, str, list[str]]], n: int) -> list[Finding]:
    """Findings for ``rows`` (label, text, cited ids) of ``slug`` that speak of competition and
    cite no competitor, or one finding when the stage cites none of the ``n`` at all."""
    found = [
        finding(
            NAME,
            slug,
            f"{slug}: {label} speaks of competition but cites no competitor from the market's "
            "map by id (COMP-nn)",
            item=label,
            evidence=short(text, 160),
            info=True,
        )
        for label, text, cited in rows
        if not cited and _COMPETITIVE.search(text)
    ]
    if not found and rows and not any(cited for _, _, cited in rows):
        found.append(
            finding(
                NAME,
                slug,
                f"{slug} cites none of the {n} competitors on the market's map (COMP-nn ids)",
                evidence=f"{len(rows)} rows, none with a competitor id",
                info=True,
            )
        )
    return found


def _cited(refs: list[str], text: str, market: market_context.MarketContext) -> list[str]:
    """What a row cites: its ids, or the competitors its words name (a session recorded before
    code relinked names counts the same as one after)."""
    return list(refs) or market_context.mentioned_competitors(text, market)


def check(ctx: Context) -> list[Finding]:
    """The competitor map is used: rows say the job and the gap, and risk-assessment and the
    scorecard cite competitors by id where they discuss competition (code has already relinked
    names to ids; what is left uncited is reported here, never silently)."""
    market = ctx.payload(market_context.SPEC.slug)
    if market is None or not market.competitors:
        return []
    found: list[Finding] = []
    if ctx.wants(market_context.SPEC.slug):
        for c in market.competitors:
            missing = [
                w
                for w, v in (("the job it does, for whom", c.job), ("the gap", c.gap))
                if not v.strip()
            ]
            if missing:
                found.append(
                    finding(
                        NAME,
                        market_context.SPEC.slug,
                        f"market-context: competitor {c.id} {c.name} does not say "
                        + " or ".join(missing),
                        item=c.id,
                        evidence="the row shows why instead: " + market_context.NOT_STATED,
                        info=True,
                    )
                )
    n = len(market.competitors)
    risk = ctx.payload(risk_assessment.SPEC.slug)
    if risk is not None and ctx.wants(risk_assessment.SPEC.slug):
        rows = [
            (f"risk {i}", text, _cited(r.competitors, text, market))
            for i, r in enumerate(risk.risks, 1)
            if (text := f"{r.risk} {r.mitigation}")
        ]
        found += _uncited(risk_assessment.SPEC.slug, rows, n)
    summary = ctx.payload(validation_summary.SPEC.slug)
    if summary is not None and ctx.wants(validation_summary.SPEC.slug):
        rows = [
            (f"the {d.name!r} score", text, _cited(d.competitors, text, market))
            for d in summary.dimensions
            if (text := f"{d.name} {d.evidence}")
        ]
        found += _uncited(validation_summary.SPEC.slug, rows, n)
    return found
