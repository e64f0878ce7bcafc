"""PDF reports to share: the validation (verdict, scorecard, risks, market, anchor) once the WHY
phase has run, and the whole specification (plus scope, capabilities, design, stories, the
fidelity chart, overrides and reworks) once the stories exist.

Built with reportlab's platypus (tables that wrap, page templates). Text is set in the bundled
DejaVu Sans (``haytham/fonts``, Bitstream Vera licence), with a fallback chain for the scripts it
lacks: bundled Noto Sans fonts (SIL OFL) for the Indic scripts, Sinhala, Thai, Lao, Khmer,
Myanmar and Ethiopic, then the PDF standard's CJK fonts (docs/reliability.md lists the scripts
and the limits: reportlab does no complex shaping). Every string from a session is escaped
before it becomes a paragraph's markup, and a long table cell continues on rows of its own, so
an item of any length splits across pages.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any
from xml.sax.saxutils import escape

from reportlab.graphics.charts.linecharts import HorizontalLineChart
from reportlab.graphics.shapes import Drawing, String
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (
    BaseDocTemplate,
    Flowable,
    Frame,
    NextPageTemplate,
    PageBreak,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

from haytham.changes.impact import impact_lines
from haytham.errors import InputError
from haytham.idea.intake import split_clarifications
from haytham.reports.blockers import stage_name, target_name
from haytham.reports.caveats import check_caveats, open_questions
from haytham.reports.pdf_columns import Fitted, fit_widths
from haytham.safety.sanitize import terminal_safe
from haytham.schemas.anchor import Invariant
from haytham.schemas.gate import STALE_CHECKS
from haytham.stages import (
    STAGES,
    STORY_STAGE,
    VERDICT_STAGE,
    architecture_decisions,
    build_buy_analysis,
    capability_model,
    market_context,
    mvp_scope,
    risk_assessment,
    system_traits,
)
from haytham.state import SessionState, payload_of

REPORTS = ("validation", "specification")
FONT, BOLD = "HaythamSans", "HaythamSans-Bold"
INK, MUTED, RULE, HEAD = (
    colors.HexColor("#1f2933"),
    colors.HexColor("#52606d"),
    colors.HexColor("#cbd2d9"),
    colors.HexColor("#e4ecf4"),
)
VERDICT_COLOUR = {"GO": "#1e7b34", "NO-GO": "#b42318", "PIVOT": "#b54708"}


# scripts DejaVu Sans lacks: the PDF standard's CJK fonts (named, not embedded: every viewer has
# them); Hangul in the Korean one, everything else East Asian in the Chinese one (GB covers kana)
KOREAN, EAST_ASIAN = "HYSMyeongJo-Medium", "STSong-Light"
_HANGUL = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7A3))
# scripts DejaVu Sans lacks, each in its bundled Noto Sans font (haytham/fonts/LICENSE-Noto),
# tried in this order after DejaVu Sans and before the CJK fonts
NOTO_SCRIPTS = (
    "Devanagari",
    "Bengali",
    "Gurmukhi",
    "Gujarati",
    "Tamil",
    "Telugu",
    "Kannada",
    "Malayalam",
    "Sinhala",
    "Thai",
    "Lao",
    "Khmer",
    "Myanmar",
    "Ethiopic",
)
CELL_LINES = 40  # a table cell taller than this continues on the next row (rows split pages)
TEXT_WIDTH = A4[0] - 36 * mm  # between the margins


def _fonts() -> None:
    """Register the fonts once per process (reportlab keeps a registry of its own)."""
    if FONT in pdfmetrics.getRegisteredFontNames():
        return
    folder = files("haytham.fonts")
    pdfmetrics.registerFont(TTFont(FONT, str(folder / "DejaVuSans.ttf")))
    pdfmetrics.registerFont(TTFont(BOLD, str(folder / "DejaVuSans-Bold.ttf")))
    pdfmetrics.registerFontFamily(FONT, normal=FONT, bold=BOLD, italic=FONT, boldItalic=BOLD)
    for script in NOTO_SCRIPTS:
        pdfmetrics.registerFont(
            TTFont(f"Noto{script}", str(folder / f"NotoSans{script}-Regular.ttf"))
        )
    pdfmetrics.registerFont(UnicodeCIDFont(KOREAN))
    pdfmetrics.registerFont(UnicodeCIDFont(EAST_ASIAN))


def _chain() -> list[tuple[str | None, dict[int, Any]]]:
    """The fonts tried for a character, in order, with the characters each draws (``None``
    for DejaVu Sans, the paragraph's own font)."""
    fonts: list[str | None] = [None, *(f"Noto{s}" for s in NOTO_SCRIPTS)]
    return [(f, pdfmetrics.getFont(f or FONT).face.charToGlyph) for f in fonts]


def _font_for(char: str, chain: list[tuple[str | None, dict[int, Any]]]) -> str | None:
    """The first font of the chain that draws ``char`` (``None``: DejaVu Sans), else for East
    Asian text the CJK font that does."""
    code = ord(char)
    for font, covered in chain:
        if code in covered:
            return font
    if code < 0x2E80:
        return None
    return KOREAN if any(lo <= code <= hi for lo, hi in _HANGUL) else EAST_ASIAN


def _style(
    name: str, size: float, *, bold: bool = False, space: float = 4, **kw: Any
) -> ParagraphStyle:
    return ParagraphStyle(
        name,
        fontName=BOLD if bold else FONT,
        fontSize=size,
        leading=size * 1.3,
        spaceAfter=space,
        textColor=kw.pop("color", INK),
        **kw,
    )


class _Doc:
    """The flowables of one report, with helpers for its recurring shapes."""

    def __init__(self) -> None:
        _fonts()
        self.title = _style("title", 20, bold=True, space=6)
        self.h1 = _style("h1", 14, bold=True, space=6, spaceBefore=10, keepWithNext=1)
        self.h2 = _style("h2", 11, bold=True, space=4, spaceBefore=6, keepWithNext=1)
        self.body = _style("body", 9.5)
        self.small = _style("small", 8, color=MUTED)
        self.cell = _style("cell", 8, space=0)
        self.cell_head = _style("cell_head", 8, bold=True, space=0)
        self.parts: list[Flowable] = []

    def text(self, value: Any, style: ParagraphStyle | None = None) -> None:
        shown = _plain(value)
        if shown:
            self.parts.append(Paragraph(_markup(shown), style or self.body))

    def heading(self, value: str, level: int = 1) -> None:
        self.parts.append(Paragraph(_markup(value), self.h1 if level == 1 else self.h2))

    def bullets(self, items: Iterable[Any]) -> None:
        for item in items:
            self.text(f"• {_plain(item)}")

    def pairs(self, rows: Sequence[tuple[str, Any]]) -> None:
        """A two-column label / value table."""
        self.table(["", ""], [[k, v] for k, v in rows if _plain(v)], widths=[45, 125], head=False)

    def table(
        self,
        header: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        widths: Sequence[float] | None = None,
        head: bool = True,
    ) -> None:
        if not rows:
            return
        fitted = _fitted(header if head else ["" for _ in header], rows, widths)
        header = fitted.header
        data = [[Paragraph(_markup(h), self.cell_head) for h in header]] if head else []
        cols = [w * mm for w in widths] if widths else [TEXT_WIDTH / len(header)] * len(header)
        for row in rows:  # a long cell goes on over rows of its own: a table splits between rows
            pieces = [_pieces(_plain(c), w) for c, w in zip(row, cols, strict=False)]
            for n in range(max(len(p) for p in pieces)):
                data.append(
                    [Paragraph(_markup(p[n] if n < len(p) else ""), self.cell) for p in pieces]
                )
        table = Table(
            data,
            colWidths=fitted.widths,
            repeatRows=1 if head else 0,
            hAlign="LEFT",
        )
        style = [
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ("LINEBELOW", (0, 0), (-1, -1), 0.25, RULE),
            ("TOPPADDING", (0, 0), (-1, -1), 2),
            ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
        ]
        if head:
            style.append(("BACKGROUND", (0, 0), (-1, 0), HEAD))
        table.setStyle(TableStyle(style))
        if fitted.landscape:  # the words need a wider page: this table gets one of its own
            self.parts += [NextPageTemplate("landscape"), PageBreak(), table]
            self.parts += [NextPageTemplate("portrait"), PageBreak()]
            return
        self.parts += [table, Spacer(1, 4 * mm)]

    def render(self, title: str, session_id: str, name: str = "") -> bytes:
        """The PDF: ``title`` (the report's kind) in every page's footer; the document's
        title is the idea's ``name`` (the session id without one)."""
        buf = io.BytesIO()
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")

        def footer(canvas: Any, doc: Any) -> None:
            canvas.saveState()
            canvas.setFont(FONT, 7.5)
            canvas.setFillColor(MUTED)
            canvas.drawString(18 * mm, 10 * mm, f"Haytham · {title} · session {session_id}")
            width = canvas._pagesize[0]  # portrait or landscape
            canvas.drawRightString(width - 18 * mm, 10 * mm, f"{stamp} · page {doc.page}")
            canvas.restoreState()

        doc = BaseDocTemplate(
            buf,
            pagesize=A4,
            leftMargin=18 * mm,
            rightMargin=18 * mm,
            topMargin=16 * mm,
            bottomMargin=18 * mm,
            title=f"{name or session_id} — {title}",
            author="Haytham",
        )
        doc.addPageTemplates(
            [_page("portrait", A4, footer), _page("landscape", landscape(A4), footer)]
        )
        doc.build(self.parts)
        return buf.getvalue()


MARGIN_MM = 18
PORTRAIT_PT = A4[0] - 2 * MARGIN_MM * mm
LANDSCAPE_PT = A4[1] - 2 * MARGIN_MM * mm


def _page(name: str, size: tuple[float, float], footer: Any) -> PageTemplate:
    """A page of ``size`` with the report's margins and footer."""
    frame = Frame(
        MARGIN_MM * mm,
        18 * mm,
        size[0] - 2 * MARGIN_MM * mm,
        size[1] - 34 * mm,
        id=name,
        leftPadding=0,
        rightPadding=0,
        topPadding=0,
        bottomPadding=0,
    )
    return PageTemplate(id=name, frames=[frame], onPage=footer, pagesize=size)


def _fitted(
    header: Sequence[str], rows: Sequence[Sequence[Any]], widths: Sequence[float] | None
) -> Fitted:
    """Column widths (points) that fit every column's longest word (see :mod:`haytham.reports.pdf_columns`)."""
    count = len(header)
    given = [w * mm for w in widths] if widths else [PORTRAIT_PT / count] * count
    columns = [[_plain(row[c]) for row in rows if c < len(row)] for c in range(count)]
    return fit_widths(
        header,
        columns,
        given,
        PORTRAIT_PT,
        lambda w: pdfmetrics.stringWidth(w, FONT, 8),
        lambda w: pdfmetrics.stringWidth(w, BOLD, 8),
        landscape_available=LANDSCAPE_PT,
    )


TITLE_CHARS = 90


def idea_title(idea: str) -> str:
    """The idea's own title: its first sentence, in the founder's words (cut at a word near
    :data:`TITLE_CHARS`), for the report's first line and the PDF's title."""
    text = " ".join(split_clarifications(idea)[0].split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].rstrip(".") or "Your idea"
    if len(first) <= TITLE_CHARS:
        return first
    return first[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def measured(scores: Any, key: str) -> float | None:
    """A stage's similarity to ``key`` (idea or anchor); ``None`` when it was not measured."""
    value = scores.get(key) if isinstance(scores, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _plain(value: Any) -> str:
    """A value as one line of readable text (lists joined, booleans as yes/no)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value if _plain(v))
    return terminal_safe(str(getattr(value, "value", value))).strip()


def _pieces(text: str, width: float) -> list[str]:
    """``text`` cut into pieces that each fit :data:`CELL_LINES` lines of a column ``width``
    points wide (counting every character as wide as a CJK one, so any script fits), at line
    breaks or spaces where it has them (a longer word is cut inside)."""
    per_line = max(1, int((width - 12) / 8))  # 6 pt padding each side; 8 pt text
    budget = per_line * CELL_LINES
    pieces: list[str] = []
    lines: list[str] = []
    used = 0
    for line in text.split("\n"):
        while len(line) > budget:
            cut = line.rfind(" ", 0, budget + 1)
            cut = cut if cut > 0 else budget
            pieces += ["\n".join(lines)] if lines else []
            lines, used = [], 0
            pieces.append(line[:cut].rstrip())
            line = line[cut:].lstrip()
        cost = max(1, -(-len(line) // per_line))
        if lines and used + cost > CELL_LINES:
            pieces.append("\n".join(lines))
            lines, used = [], 0
        lines.append(line)
        used += cost
    return [*pieces, "\n".join(lines)]


def _markup(text: str) -> str:
    """Session text as paragraph markup: escaped, line breaks kept, and each run of characters
    DejaVu Sans lacks set in the first font of the fallback chain that draws it."""
    chain = _chain()
    runs: list[tuple[str | None, str]] = []
    for char in text:
        font = _font_for(char, chain)
        if runs and runs[-1][0] == font:
            runs[-1] = (font, runs[-1][1] + char)
        else:
            runs.append((font, char))
    parts = [
        escape(chunk) if font is None else f'<font name="{font}">{escape(chunk)}</font>'
        for font, chunk in runs
    ]
    return "".join(parts).replace("\n", "<br/>")


# -- the validation ------------------------------------------------------------------------
def _cover(doc: _Doc, state: SessionState, title: str) -> None:
    doc.parts.append(Paragraph(_markup(idea_title(state.idea)), doc.title))
    doc.text(f"{title} · session {state.session_id or ''}", doc.small)
    caveats = check_caveats(state)
    if caveats:  # on the first page, before anything a reader might take as checked
        doc.heading("Read this first", 2)
        doc.bullets(caveats)
    doc.heading("The idea")
    text, answers = split_clarifications(state.idea)
    doc.text(text)
    if answers:  # the founder's answers to the intake questions, as a list, not Markdown
        doc.heading("Your answers to the intake questions", level=2)
        for question, answer in answers:
            doc.text(f"{question} — {answer}")


def _verdict(doc: _Doc, state: SessionState) -> None:
    summary = payload_of(state.outputs, VERDICT_STAGE.slug)
    doc.heading("Verdict")
    if summary is None:
        doc.text("The validation summary has not run yet.")
        return
    colour = VERDICT_COLOUR.get(summary.verdict or "", "#1f2933")
    doc.parts.append(
        Paragraph(
            f'<font color="{colour}">{escape(summary.verdict or "no verdict")}</font>',
            _style("verdict", 18, bold=True, space=4),
        )
    )
    record = state.gates.get(VERDICT_STAGE.phase.gate)
    doc.pairs(
        [
            ("Why", summary.verdict_reason),
            ("Risk level", summary.risk_level),
            (f"Gate {VERDICT_STAGE.phase.gate}", record.status if record else "not opened yet"),
        ]
    )
    doc.text(summary.executive_summary)
    doc.heading("Scorecard", 2)
    doc.table(
        ["Dimension", "Score", "Evidence", "Competitors"],
        [[d.name, d.score, d.evidence, d.competitors] for d in summary.dimensions],
        widths=[38, 14, 100, 22],
    )
    doc.heading("Knockout criteria", 2)
    doc.table(
        ["Criterion", "Passed", "Evidence"],
        [[k.criterion, k.passed, k.evidence] for k in summary.knockout_criteria],
        widths=[50, 16, 108],
    )
    if summary.next_steps:
        doc.heading("Next steps", 2)
        doc.bullets(summary.next_steps)
    if summary.pivot_options:
        doc.heading("Pivot options", 2)
        doc.bullets(summary.pivot_options)


def _risks(doc: _Doc, state: SessionState) -> None:
    risks = payload_of(state.outputs, risk_assessment.SPEC.slug)
    if risks is None:
        return
    doc.heading("Risks")
    doc.table(
        ["Risk", "Likelihood", "Impact", "Mitigation", "Competitors"],
        [[r.risk, r.likelihood, r.impact, r.mitigation, r.competitors] for r in risks.risks],
        widths=[50, 19, 15, 68, 22],
    )
    doc.heading("The founder's claims, assessed", 2)
    doc.table(
        ["Claim", "Origin", "Severity", "Support", "Note"],
        [[c.statement, c.origin, c.severity, c.support, c.note] for c in risks.claims],
        widths=[55, 16, 16, 20, 67],
    )


def _market(doc: _Doc, state: SessionState) -> None:
    market = payload_of(state.outputs, market_context.SPEC.slug)
    if market is None:
        return
    doc.heading("Market")
    doc.pairs(
        [
            ("Market size", market.market_size),
            ("Switching cost", f"{market.switching_cost} {market.switching_cost_note}".strip()),
        ]
    )
    doc.heading("Jobs to be done", 2)
    doc.bullets(market.jobs_to_be_done)
    if market.trends:
        doc.heading("Trends", 2)
        doc.bullets(market.trends)
    claims = state.outputs[market_context.SPEC.slug].claims
    if claims:
        doc.heading("Claims and where they come from", 2)
        doc.table(
            ["Claim", "Source", "Evidence"],
            [[c.statement, c.shown_source, c.evidence or ""] for c in claims],
            widths=[70, 45, 59],
        )
    doc.heading("Competitors", 2)
    doc.table(
        ["Id", "Competitor", "Job, for whom", "Same job?", "Pricing", "Switching", "Gap we use"],
        [
            [
                c.id,
                c.name,
                c.job_shown,
                c.jtbd_match,
                f"{c.pricing_evidence} ({c.shown_pricing_source})".strip(),
                c.switching_cost,
                c.gap_shown,
            ]
            for c in market.competitors
        ],
        widths=[15, 25, 34, 17, 33, 17, 33],
    )


def _anchor(doc: _Doc, state: SessionState) -> None:
    anchor = state.anchor
    if anchor is None:
        return
    doc.heading("Concept anchor")
    doc.pairs(
        [
            ("Goal", anchor.intent.goal),
            ("Constraints", anchor.intent.explicit_constraints),
            ("Non-goals", anchor.intent.non_goals),
        ]
    )
    doc.table(
        ["Id", "Invariant", "Value", "Where it came from", "Source (the founder's words)"],
        [
            [
                i.id,
                i.property,
                i.shown_value(),
                _came_from(i),
                i.source if i.grounded is not False else f"{i.source} (not found in the idea)",
            ]
            for i in anchor.invariants
        ],
        widths=[12, 30, 45, 30, 57],
    )
    questions = open_questions(state)
    if questions:
        doc.heading("Open questions", 2)
        doc.bullets(questions)
    if anchor.identity:
        doc.heading("What makes it distinctive", 2)
        doc.bullets(f"{f.feature} — {f.why_distinctive}" for f in anchor.identity)
    clarified = [c for g in state.gates.values() for c in g.clarifications]
    if clarified:
        doc.heading("Clarifications by the reviewer", 2)
        doc.table(
            ["Invariant", "Chosen", "By"],
            [
                [
                    c.invariant,
                    "left open" if c.open else c.choice,
                    "auto-approve" if c.auto else (c.by or "reviewer"),
                ]
                for c in clarified
            ],
            widths=[45, 100, 29],
        )


def _came_from(inv: Invariant) -> str:
    """Provenance in a table cell: open, who clarified it, auto-chosen, or the founder."""
    if inv.provenance == "open":
        return "open (not decided)"
    if inv.provenance == "reviewer":
        return f"clarified by {inv.decided_by or 'the reviewer'}"
    if inv.provenance == "auto":
        return f"auto-chosen, unconfirmed ({inv.confidence:.0%})"
    return f"founder ({inv.confidence:.0%})"


# -- the rest of the specification ------------------------------------------------------------
def _scope(doc: _Doc, state: SessionState) -> None:
    scope = payload_of(state.outputs, mvp_scope.SPEC.slug)
    if scope is None:
        return
    doc.heading("MVP scope")
    doc.pairs(
        [
            ("The one thing", scope.the_one_thing),
            ("Primary segment", scope.primary_segment),
            ("Appetite", scope.appetite),
        ]
    )
    doc.heading("In scope", 2)
    doc.table(
        ["Id", "Item", "Description"],
        [[i.id, i.title, i.description] for i in scope.in_scope],
        widths=[20, 50, 104],
    )
    doc.heading("Out of scope", 2)
    doc.table(
        ["Id", "Item", "Why"],
        [[i.id, i.title, i.description] for i in scope.out_of_scope],
        widths=[20, 50, 104],
    )
    if scope.success_criteria:
        doc.heading("Success criteria", 2)
        doc.bullets(scope.success_criteria)


def _capabilities(doc: _Doc, state: SessionState) -> None:
    caps = payload_of(state.outputs, capability_model.SPEC.slug)
    if caps is None:
        return
    doc.heading("Capabilities")
    doc.table(
        ["Id", "Capability", "Serves", "Description"],
        [[c.id, c.name, c.serves_scope, c.description] for c in caps.functional],
        widths=[25, 40, 24, 85],
    )
    doc.heading("Non-functional", 2)
    doc.table(
        ["Id", "Requirement", "Category", "Description"],
        [[c.id, c.name, c.category, c.description] for c in caps.non_functional],
        widths=[25, 40, 24, 85],
    )


def _design(doc: _Doc, state: SessionState) -> None:
    traits = payload_of(state.outputs, system_traits.SPEC.slug)
    if traits is not None:
        doc.heading("System traits")
        doc.table(
            ["Trait", "Value"],
            [[name, traits.value_of(name)] for name in type(traits).model_fields],
            widths=[45, 129],
        )
    buys = payload_of(state.outputs, build_buy_analysis.SPEC.slug)
    if buys is not None:
        doc.heading("Build or buy")
        doc.table(
            ["Need", "Decision", "Service", "Rationale"],
            [[b.need, b.recommendation, b.service, b.rationale] for b in buys.items],
            widths=[38, 18, 30, 88],
        )
    decisions = payload_of(state.outputs, architecture_decisions.SPEC.slug)
    if decisions is not None:
        doc.heading("Architecture decisions")
        doc.table(
            ["Id", "Decision", "Technologies", "Rationale"],
            [
                [d.id, f"{d.title}: {d.decision}", d.technologies, d.rationale]
                for d in decisions.decisions
            ],
            widths=[28, 60, 30, 56],
        )


def _stories(doc: _Doc, state: SessionState) -> None:
    stories = payload_of(state.outputs, STORY_STAGE.slug)
    if stories is None:
        return
    by_id = {s.id: s for s in stories.stories}
    ordered = [by_id[i] for i in stories.order or list(by_id) if i in by_id]
    doc.heading("Stories")
    doc.text(f"{len(ordered)} stories in build order (appetite: {stories.appetite or 'not set'}).")
    doc.table(
        ["#", "Id", "Story", "Layer", "Implements", "After"],
        [[n, s.id, s.title, s.layer, s.implements, s.depends_on] for n, s in enumerate(ordered, 1)],
        widths=[7, 22, 62, 21, 36, 26],
    )


def _fidelity(doc: _Doc, state: SessionState) -> None:
    """The divergence curve: each stage's similarity to the idea and to the anchor."""
    ran = [s for s in STAGES if s.slug in state.divergence]
    if not ran:
        return
    doc.heading("Fidelity to the idea")
    series = [("idea", colors.HexColor("#2f6fb0")), ("anchor", colors.HexColor("#b54708"))]
    drawing = Drawing(170 * mm, 70 * mm)
    chart = HorizontalLineChart()
    chart.x, chart.y, chart.width, chart.height = 12 * mm, 14 * mm, 150 * mm, 48 * mm
    # a value not measured (stage 1 runs before the anchor exists) is a gap, never a 0
    chart.data = [[measured(state.divergence[s.slug], k) for s in ran] for k, _ in series]
    chart.categoryAxis.categoryNames = [str(s.number) for s in ran]
    chart.categoryAxis.labels.fontName = FONT
    chart.valueAxis.labels.fontName = FONT
    chart.valueAxis.valueMin, chart.valueAxis.valueMax = 0.0, 1.0
    for n, (_, colour) in enumerate(series):
        chart.lines[n].strokeColor = colour
        chart.lines[n].strokeWidth = 1.5
    drawing.add(chart)
    for n, (name, colour) in enumerate(series):
        label = String(14 * mm + n * 45 * mm, 4 * mm, f"— similarity to the {name}", fontName=FONT)
        label.fillColor, label.fontSize = colour, 8
        drawing.add(label)
    doc.parts.append(drawing)
    doc.text("Stage numbers along the bottom; higher is closer.", doc.small)
    gaps = [
        f"stage {s.number} to the {k}"
        for s in ran
        for k, _ in series
        if measured(state.divergence[s.slug], k) is None
    ]
    if gaps:
        doc.text(f"Not measured (no point drawn): {', '.join(gaps)}.", doc.small)


def _decisions(doc: _Doc, state: SessionState) -> None:
    overrides = [(n, o) for n, g in sorted(state.gates.items()) for o in g.overrides]
    reworks = [(n, g) for n, g in sorted(state.gates.items()) if g.rework_stage]
    if not overrides and not reworks and not state.revisions:
        return
    doc.heading("Reviewer decisions")
    doc.table(
        ["Gate", "Overridden", "Reason", "By"],
        [
            [
                n,
                "stale checks (approved anyway)"
                if o.target == STALE_CHECKS
                else target_name(o.target),
                o.reason,
                "auto-approve" if o.auto else (o.by or "reviewer"),
            ]
            for n, o in overrides
        ],
        widths=[12, 55, 85, 22],
    )
    doc.table(
        ["Gate", "Stage sent back", "Feedback"],
        [[n, g.rework_stage, g.feedback] for n, g in reworks],
        widths=[12, 40, 122],
    )


def _where(where: str) -> str:
    """A change's place as the pages name it: ``in_scope[SCOPE-1]`` -> ``In scope · SCOPE-1``."""
    found = re.fullmatch(r"(\w+)\[(.+)\]", where)
    field, item = (found[1], found[2]) if found else (where, "")
    words = field.replace("_", " ")
    return words[:1].upper() + words[1:] + (f" · {item}" if item else "")


def _change_requests(doc: _Doc, state: SessionState) -> None:
    """The founder's change requests, as the Markdown export lists them: when, which stage,
    the request, why, the invariants it touches and what changed."""
    if not state.revisions:
        return
    names = {
        i.id: f"{i.id} {i.property}" for i in (state.anchor.invariants if state.anchor else [])
    }
    doc.heading("Change requests")
    for r in state.revisions:
        doc.heading(f"{stage_name(r.stage)}: “{r.request}”", level=2)
        touched = (
            "; ".join(impact_lines(r.impact))
            if r.impact
            else ", ".join(names.get(i, i) for i in r.invariants_touched)
        ) or "none"
        doc.pairs(
            [
                ("When", r.at[:16].replace("T", " ")),
                ("Why", r.why),
                ("Invariants touched (code's check)", touched),
            ]
        )
        doc.table(
            ["Change", "Where", "Before", "After"],
            [[c.kind, _where(c.where), c.before, c.after] for c in r.changes],
            widths=[16, 40, 59, 59],
        )


def report(state: SessionState, kind: str, record: Sequence[str] = ()) -> bytes:
    """The ``validation`` or ``specification`` report of ``state`` as PDF bytes; ``record``: the
    decision record's sentences (who approved, rejected, overrode … when), listed last."""
    if kind not in REPORTS:
        raise InputError(f"A report is one of {', '.join(REPORTS)}, not {kind!r}.")
    if payload_of(state.outputs, VERDICT_STAGE.slug) is None:
        raise InputError(
            "There is nothing to report yet: the validation summary has not run; "
            "run the session to Gate 1 first."
        )
    if kind == "specification" and payload_of(state.outputs, STORY_STAGE.slug) is None:
        raise InputError(
            "The specification needs the stories: run the session to Gate 4 first, or export "
            "the validation report (--format validation-pdf)."
        )
    doc = _Doc()
    title = "Validation report" if kind == "validation" else "Product specification"
    _cover(doc, state, title)
    _verdict(doc, state)
    _anchor(doc, state)
    _market(doc, state)
    _risks(doc, state)
    if kind == "specification":
        _scope(doc, state)
        _capabilities(doc, state)
        _design(doc, state)
        _stories(doc, state)
        _fidelity(doc, state)
        _decisions(doc, state)
        _change_requests(doc, state)
    if record:
        doc.heading("Decisions on record")
        doc.bullets(record)
    return doc.render(title, state.session_id or "", idea_title(state.idea))
