"""The PDF reports and the competitor map, as the Verdict and Stories pages show them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import attempt, backend
from frontend_streamlit.components.safe_text import md
from haytham.people.audit import NOT_DECISIONS
from haytham.reports.export import COMPETITOR_COLUMNS, competitor_rows, export, to_competitors_csv
from haytham.stages import STORY_STAGE, VERDICT_STAGE, market_context
from haytham.state import SessionState, payload_of

REPORTS = {
    "validation-pdf": ("Validation report (PDF)", VERDICT_STAGE),
    "pdf": ("Full specification (PDF)", STORY_STAGE),
}


def recorded(sid: str, fmt: str) -> None:
    """A download button's click: the download goes on the decision record (who, when)."""
    attempt(lambda: backend().service.record_download(sid, fmt))


def pdf_download(sid: str, state: SessionState, fmt: str) -> None:
    """A download button for one report; disabled, with why, until its stage has run."""
    title, needs = REPORTS[fmt]
    ready = needs.slug in state.outputs
    record = [  # who decided, as the CLI's export lists it (haytham/people/audit.py)
        d.sentence
        for d in (attempt(lambda: backend().service.decisions(sid)) or [])
        if d.action not in NOT_DECISIONS
    ]
    data = attempt(lambda: export(state, fmt, record)) if ready else None
    st.download_button(
        title,
        data=data or b"",
        file_name=f"{sid}-{'specification' if fmt == 'pdf' else 'validation'}.pdf",
        mime="application/pdf",
        disabled=data is None,
        key=f"download_{fmt}",
        icon=":material/picture_as_pdf:",
        on_click=recorded,  # on the decision record; the rerun serves the same file
        args=(sid, fmt),
        help=None if ready else f"Available once {needs.title.lower()} has run.",
    )


def competitor_map(sid: str, state: SessionState) -> None:
    """The market's competitors as a table to sort (click a column) and download (the same CSV
    as ``haytham export --format competitors``)."""
    market = payload_of(state.outputs, market_context.SPEC.slug)
    if market is None or not market.competitors:
        return
    st.subheader("Competitor map")
    table = pd.DataFrame(competitor_rows(state), columns=list(COMPETITOR_COLUMNS))
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(
        "Click a column to sort. Risks and the scorecard cite these ids (“cited by”); switching "
        f"cost is {md(market.switching_cost)} overall. {md(market.switching_cost_note)}"
    )
    st.download_button(
        "Download the competitor map (CSV)",
        data=to_competitors_csv(state).encode("utf-8"),
        file_name=f"{sid}-competitors.csv",
        mime="text/csv",
        key="download_competitors",
        icon=":material/download:",
        on_click=recorded,
        args=(sid, "competitors"),
    )
