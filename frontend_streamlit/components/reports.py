"""The PDF reports and the competitor map, as the Verdict and Stories pages show them."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from components.context import attempt
from components.safe_text import md

from haytham.export import export
from haytham.pipeline.state import SessionState, payload_of
from haytham.sanitize import spreadsheet_cell
from haytham.stages import STORY_STAGE, VERDICT_STAGE, market_context

REPORTS = {
    "validation-pdf": ("Validation report (PDF)", VERDICT_STAGE),
    "pdf": ("Full specification (PDF)", STORY_STAGE),
}


def pdf_download(sid: str, state: SessionState, fmt: str) -> None:
    """A download button for one report; disabled, with why, until its stage has run."""
    title, needs = REPORTS[fmt]
    ready = needs.slug in state.outputs
    data = attempt(lambda: export(state, fmt)) if ready else None
    st.download_button(
        title,
        data=data or b"",
        file_name=f"{sid}-{'specification' if fmt == 'pdf' else 'validation'}.pdf",
        mime="application/pdf",
        disabled=data is None,
        key=f"download_{fmt}",
        icon=":material/picture_as_pdf:",
        on_click="ignore",  # no rerun: the PDF is not built again, the file stays served
        help=None if ready else f"Available once {needs.title.lower()} has run.",
    )


def competitor_map(sid: str, state: SessionState) -> None:
    """The market's competitors as a table to sort (click a column) and download."""
    market = payload_of(state.outputs, market_context.SPEC.slug)
    if market is None or not market.competitors:
        return
    st.subheader("Competitor map")
    table = pd.DataFrame(
        [
            {
                "id": c.id,
                "competitor": c.name,
                "job, for whom": c.job,
                "same job?": c.jtbd_match,
                "pricing evidence": c.pricing_evidence,
                "pricing from": c.pricing_source.replace("_", " "),
                "switching cost": c.switching_cost,
                "gap we use": c.gap,
            }
            for c in market.competitors
        ]
    )
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(
        "Click a column to sort. Risks and the scorecard cite these ids; switching cost is "
        f"{md(market.switching_cost)} overall. {md(market.switching_cost_note)}"
    )
    st.download_button(
        "Download the competitor map (CSV)",
        data=table.map(spreadsheet_cell).to_csv(index=False).encode("utf-8"),
        file_name=f"{sid}-competitors.csv",
        mime="text/csv",
        key="download_competitors",
        icon=":material/download:",
        on_click="ignore",
    )
