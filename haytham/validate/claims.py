"""Claim consistency and grounding (ADR-022 2a, 3a): numbers agree, sources exist, founders said it.

Three checks over the envelopes' ``claims`` (plus market-context's ``market_size`` and its
competitors' pricing):

* **inconsistent quantity** — one quantity (market size, a price, a user count, a percentage of
  the same population) stated with different values in two stages; the later stage is the subject.
  Quantities are compared only when their kind, period, topic and qualifiers (TAM/SAM/SOM,
  region, year) agree, so "TAM $12B" and "SAM $4.3B" do not clash.
* **unsourced** — a claim marked ``web_search`` with no logged ``tool_call`` of a search/fetch
  tool (from that stage or an earlier one) whose input or result carries the claim's numbers
  (or, for claims without numbers, its URL or most of its key terms). The runner stores it as
  ``unsourced`` right after the stage runs (:func:`downgrade_unsourced`; the label given is kept
  in ``claimed_source``), so the output, the exports and the PDF say unsourced, and this check
  reports it. A competitor's ``pricing_source: web_search`` is checked the same way against its
  ``pricing_evidence`` (kept in ``claimed_pricing_source``). A statistic the stage itself marks
  ``unsourced`` is reported too.
* **phantom founder claim** — a risk-assessment claim with ``origin: founder`` that the idea does
  not make: it states numbers the idea never states; or it introduces a business model (paying,
  fees, prices, subscriptions, revenue, funding, an amount of money) where the idea affirms none
  (an idea saying "no money changes hands" affirms none); or its meaning is far from every
  sentence of the idea (cosine under ``founder_meaning_min``) *and* its content words are mostly
  absent from the idea and idea-analysis. Meaning, not shared words, decides: a terse paraphrase
  in other words is close in meaning; a claim that reuses the idea's words to add a per-sack fee
  introduces money. Without embeddings, the share of content words decides alone.

Cannot catch: a quantity restated in words without digits, two different quantities that share
a topic and qualifiers, a tool result that contains the number by coincidence, or a phantom
commitment without money or numbers that is close in meaning to the idea ("parents have asked
for an app").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from haytham.schemas.envelope import StageOutput
from haytham.stages import idea_analysis, market_context, risk_assessment
from haytham.validate.common import STAGE_NUMBER, Context, finding
from haytham.validate.lexicon import hits, key_terms
from haytham.validate.model import CLAIM_CONSISTENCY, Finding
from haytham.validate.negation import affirmed_matches
from haytham.validate.quantities import Quantity, close, extract, numbers, same_quantity
from haytham.validate.text import normalize, sentences, short, strings_of, term_set

NAME = CLAIM_CONSISTENCY
_URL = re.compile(r"https?://[^\s)\]\"'>]+", re.IGNORECASE)
_SEARCH_TOOL = re.compile(r"search|fetch|browse|http|web|retriev", re.IGNORECASE)


def _stated(ctx: Context) -> list[tuple[str, str, Quantity]]:
    """(stage, statement, quantity) in pipeline order."""
    rows: list[tuple[str, str, Quantity]] = []
    for slug in sorted(ctx.snap.outputs, key=lambda s: STAGE_NUMBER.get(s, 99)):
        out = ctx.snap.outputs[slug]
        statements = [c.statement for c in out.claims]
        if slug == market_context.SPEC.slug:
            statements.append(out.payload.market_size)
        for statement in dict.fromkeys(statements):
            rows += [(slug, statement, q) for q in extract(statement)]
    return rows


def _inconsistent(ctx: Context) -> list[Finding]:
    found: list[Finding] = []
    rows = _stated(ctx)
    reported: set[tuple[str, str]] = set()
    for i, (slug_b, text_b, qb) in enumerate(rows):
        if not ctx.wants(slug_b):
            continue
        for slug_a, text_a, qa in rows[:i]:
            if slug_a == slug_b or not same_quantity(qa, qb):
                continue
            if close(qa.value, qb.value, ctx.settings.quantity_tolerance):
                break  # an earlier stage agrees with this statement
            key = (slug_b, text_b)
            if key in reported:
                break
            reported.add(key)
            found.append(
                finding(
                    NAME,
                    slug_b,
                    f"{slug_b} states {qb.text} where {slug_a} stated {qa.text} for "
                    "what looks like the same quantity",
                    evidence=f"{slug_a}: {short(text_a, 120)!r} | {slug_b}: {short(text_b, 120)!r}",
                )
            )
            break
    return found


def _call_data(call: Mapping[str, Any]) -> Mapping[str, Any]:
    data = call.get("data")
    if isinstance(data, Mapping) and "tool" in data:
        return {**data, "stage": call.get("stage", data.get("stage"))}
    return call


def _tool_texts(ctx: Context, slug: str) -> list[str]:
    return search_texts(ctx.snap.tool_calls, slug)


def search_texts(tool_calls: Iterable[Mapping[str, Any]], slug: str) -> list[str]:
    """The input and result of every logged search/fetch tool call of ``slug`` or an earlier
    stage (``tool_call`` events, whole or their ``data``)."""
    limit = STAGE_NUMBER.get(slug, 99)
    texts = []
    for raw in tool_calls:
        call = _call_data(raw)
        if not _SEARCH_TOOL.search(str(call.get("tool", ""))):
            continue
        stage = call.get("stage")
        if isinstance(stage, str) and STAGE_NUMBER.get(stage, 0) > limit:
            continue
        texts.append(f"{call.get('input', '')}\n{call.get('result', '')}")
    return texts


def _norm_url(url: str) -> str:
    url = re.sub(r"^https?://(?:www\.)?", "", url.strip().lower())
    return url.split("#")[0].rstrip("/.,;")


def _sourced(statement: str, evidence: str | None, tool_texts: list[str], tolerance: float) -> bool:
    wanted = [q.value for q in extract(statement)]
    urls = [_norm_url(u) for u in _URL.findall(evidence or "")]
    for text in tool_texts:
        low = text.lower()
        if wanted:
            have = numbers(text)
            if all(any(close(w, h, tolerance) for h in have) for w in wanted):
                return True
            continue
        if urls and any(u in re.sub(r"https?://(?:www\.)?", "", low) for u in urls):
            return True
        needles = key_terms(statement)
        if needles and len(hits(needles, term_set(text))) >= 0.6 * len(needles):
            return True
    return False


def _pricing_backed(competitor: Any, tool_texts: list[str]) -> bool:
    evidence = (competitor.pricing_evidence or "").strip()
    return bool(evidence) and _sourced(evidence, evidence, tool_texts, 0.01)


def downgrade_unsourced(
    output: StageOutput, slug: str, tool_calls: Iterable[Mapping[str, Any]]
) -> tuple[StageOutput, list[str]]:
    """``output`` with every ``web_search`` label that no logged search backs stored as
    ``unsourced`` (the label given kept in ``claimed_source``, or ``claimed_pricing_source``
    for a competitor's pricing), and one sentence per change. Code rewrites the data the
    exports and reports read; a warning alone would leave the label standing."""
    texts = search_texts(tool_calls, slug)
    notes: list[str] = []
    claims = []
    for claim in output.claims:
        claim = claim.model_copy(update={"claimed_source": None})  # code's field, never a model's
        if claim.source == "web_search" and not _sourced(
            claim.statement, claim.evidence, texts, 0.01
        ):
            claim = claim.model_copy(update={"source": "unsourced", "claimed_source": "web_search"})
            notes.append(f"claim {short(claim.statement, 80)!r}")
        claims.append(claim)
    update: dict[str, Any] = {"claims": claims}
    competitors = getattr(output.payload, "competitors", None)
    if slug == market_context.SPEC.slug and competitors:
        fixed = []
        for c in competitors:
            c = c.model_copy(update={"claimed_pricing_source": None})
            if c.pricing_source == "web_search" and not _pricing_backed(c, texts):
                c = c.model_copy(
                    update={"pricing_source": "unsourced", "claimed_pricing_source": "web_search"}
                )
                notes.append(f"{c.id} {c.name} pricing")
            fixed.append(c)
        update["payload"] = output.payload.model_copy(update={"competitors": fixed})
    return output.model_copy(update=update), notes


def _unsourced(ctx: Context) -> list[Finding]:
    found: list[Finding] = []
    for slug, out in ctx.snap.outputs.items():
        if not ctx.wants(slug):
            continue
        tool_texts: list[str] | None = None
        for claim in out.claims:
            if claim.claimed_source == "web_search" and claim.source != "web_search":
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{slug} cited web_search for a claim no logged search result "
                        "supports; code stored it as unsourced",
                        evidence=f"{short(claim.statement, 140)!r} (evidence: "
                        f"{short(claim.evidence or 'none', 80)})",
                    )
                )
            elif claim.source == "web_search":
                if tool_texts is None:
                    tool_texts = _tool_texts(ctx, slug)
                if not _sourced(claim.statement, claim.evidence, tool_texts, 0.01):
                    found.append(
                        finding(
                            NAME,
                            slug,
                            f"{slug} cites web_search for a claim no logged search "
                            "result supports; treat it as unsourced",
                            evidence=f"{short(claim.statement, 140)!r} (evidence: "
                            f"{short(claim.evidence or 'none', 80)})",
                        )
                    )
            elif claim.source == "unsourced" and is_statistic(claim.statement):
                found.append(
                    finding(
                        NAME,
                        slug,
                        f"{slug} states an unsourced statistic",
                        evidence=short(claim.statement, 160),
                    )
                )
    return found


def _unsourced_pricing(ctx: Context) -> list[Finding]:
    slug = market_context.SPEC.slug
    market = ctx.payload(slug)
    if market is None or not ctx.wants(slug):
        return []
    found: list[Finding] = []
    tool_texts = _tool_texts(ctx, slug)
    for c in market.competitors:
        downgraded = c.claimed_pricing_source == "web_search" and c.pricing_source != "web_search"
        if downgraded or (c.pricing_source == "web_search" and not _pricing_backed(c, tool_texts)):
            done = "code stored it as unsourced" if downgraded else "treat it as unsourced"
            found.append(
                finding(
                    NAME,
                    slug,
                    f"{slug} cites web_search for {c.id} {c.name}'s pricing and no logged "
                    f"search result shows it; {done}",
                    item=c.id,
                    evidence=short(c.pricing_evidence or "no pricing evidence", 140),
                )
            )
    return found


def is_statistic(statement: str) -> bool:
    """Money, a percentage or a count of at least 100 ("8 people" is structure, not data)."""
    return any(q.kind != "count" or q.value >= 100 for q in extract(statement))


def founder_support(
    statement: str, idea: str, restated: str = ""
) -> tuple[float, list[str], list[float]]:
    """(share of key terms found in the idea or in ``restated`` — the pipeline's own restatement
    of the idea, idea-analysis, which words it as the later stages do — missing terms, numbers
    the idea itself never states)."""
    needles = key_terms(statement)
    idea_terms = term_set(idea) | (term_set(restated) if restated else set())
    found = hits(needles, idea_terms)
    share = len(found) / len(needles) if needles else 1.0
    idea_numbers = numbers(normalize(idea)) + numbers(idea)
    unknown = [
        q.value
        for q in extract(statement)
        if not any(close(v, n, 0.01) for v in q.readings() for n in idea_numbers)
    ]
    return share, [n for n in needles if n not in found], unknown


_MONEY = re.compile(
    r"(?:[£$€¥]\s?\d|\b\d[\d.,]*\s?(?:usd|eur|gbp|dollars?|euros?|pounds?)\b|"
    r"\b(?:pay|pays|paid|paying|payments?|fees?|pric(?:e|es|ed|ing)|subscri(?:be|bers?|ptions?)|"
    r"revenue|monetis\w*|monetiz\w*|fund|funds|funded|funding|charg(?:e|es|ed|ing)|"
    r"sells?|selling|sold|invoic\w*|membership fees?|commission)\b)"
)
"""A business model: money changing hands (the generic vocabulary of paying, not a domain's)."""


def introduces_money(statement: str, idea: str) -> str:
    """The clause of ``statement`` that affirms a business model the idea never affirms, or ''."""
    said = affirmed_matches(statement, _MONEY)
    if not said or affirmed_matches(idea, _MONEY):
        return ""
    return said[0]


def _closest_in_idea(ctx: Context, statements: list[str]) -> list[float] | None:
    """Per statement, the cosine of its closest idea sentence (None without embeddings)."""
    if ctx.embedder is None or not ctx.settings.embeddings or not statements:
        return None
    idea = sentences(ctx.snap.idea) or [ctx.snap.idea]
    matrix = ctx.embedder.encode([*idea, *statements])
    sims = matrix[len(idea) :] @ matrix[: len(idea)].T
    return [float(row.max()) for row in sims]


def _phantom(ctx: Context) -> list[Finding]:
    risk = ctx.payload(risk_assessment.SPEC.slug)
    if risk is None or not ctx.wants(risk_assessment.SPEC.slug) or not ctx.snap.idea.strip():
        return []
    analysis = ctx.output(idea_analysis.SPEC.slug)
    restated = (
        ". ".join([analysis.tldr, analysis.content, *strings_of(analysis.payload)])
        if analysis is not None
        else ""
    )
    found: list[Finding] = []
    founder = [c for c in risk.claims if c.origin == "founder"]
    closest = _closest_in_idea(ctx, [c.statement for c in founder])
    for n, claim in enumerate(founder):
        share, missing, unknown = founder_support(claim.statement, ctx.snap.idea, restated)
        money = introduces_money(claim.statement, ctx.snap.idea)
        near = closest[n] if closest is not None else None
        far = share < ctx.settings.founder_support_min and (
            near is None or near < ctx.settings.founder_meaning_min
        )
        if unknown or money or far:
            why = (
                f"numbers {unknown} are not in the idea"
                if unknown
                else f"it adds a business model the idea never mentions: {short(money, 80)!r}"
                if money
                else f"only {share:.0%} of its key terms occur in the idea or idea-analysis"
                + (
                    f", and no sentence of the idea is close in meaning ({near:.2f})"
                    if near
                    else ""
                )
            )
            found.append(
                finding(
                    NAME,
                    risk_assessment.SPEC.slug,
                    "risk-assessment attributes to the founder a claim the "
                    f"idea never makes ({why})",
                    evidence=f"{short(claim.statement, 140)!r}; missing terms {missing[:6]}",
                )
            )
    return found


def check(ctx: Context) -> list[Finding]:
    """Warnings for quantities stated differently across stages, web-search claims and pricing
    no logged tool call supports, and founder claims the idea never makes."""
    return _inconsistent(ctx) + _unsourced(ctx) + _unsourced_pricing(ctx) + _phantom(ctx)
