"""Verdict: GO / NO-GO / PIVOT with the scorecard. A NO-GO stops the run unless the reviewer
proceeds anyway, with a reason, in Gate 1's decision panel (this page links there)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import (
    attempt,
    backend,
    link,
    require_session,
    show_flash,
)
from frontend_streamlit.components.reports import competitor_map, pdf_download
from frontend_streamlit.components.safe_text import badge_label, md
from frontend_streamlit.components.stale_banner import stale_banner
from haytham.stages import VERDICT_STAGE
from haytham.state import SessionState, gate_of, payload_of

GATE = VERDICT_STAGE.phase.gate  # the gate a NO-GO blocks
STYLE = {
    "GO": ("green", ":material/rocket_launch:"),
    "NO-GO": ("red", ":material/block:"),
    "PIVOT": ("orange", ":material/alt_route:"),
}

b = backend()
sid = require_session(b)
st.title("Verdict")
show_flash()
state = attempt(lambda: b.service.load_state(sid)) or SessionState()
stale_banner(b, sid, state=state)
summary = payload_of(state.outputs, VERDICT_STAGE.slug)
if summary is None:
    st.info(
        "No verdict yet: it comes from the validation summary, the last stage of the WHY phase."
    )
    link("run", "Watch the run", ":material/play_circle:")
    st.stop()

verdict = summary.verdict or "?"
color, icon = STYLE.get(verdict, ("gray", ":material/help:"))
# the verdict is decided by code (GO, NO-GO or PIVOT); anything else in the file is escaped
st.badge(verdict if verdict in STYLE else badge_label(verdict), color=color, icon=icon)  # type: ignore[arg-type]
st.markdown(
    f"**Why:** {md(summary.verdict_reason or '')} · **risk level:** "
    f"{md(summary.risk_level or 'unknown')}"
)
st.markdown(md(summary.executive_summary))

st.subheader("Scorecard")
dims = pd.DataFrame(
    [{**d.model_dump(), "competitors": ", ".join(d.competitors)} for d in summary.dimensions],
    columns=["name", "score", "evidence", "competitors"],
)
st.dataframe(
    dims,
    hide_index=True,
    column_config={
        "score": st.column_config.ProgressColumn(
            "score (1-5)", min_value=0, max_value=5, format="%d"
        )
    },
)
if len(dims):
    st.caption(
        f"Mean score {dims['score'].mean():.2f} (GO needs ≥ 3.5 without high risk; "
        "below 2.5 is NO-GO)."
    )
st.subheader("Knockout criteria")
knock = pd.DataFrame(
    [k.model_dump() for k in summary.knockout_criteria],
    columns=["criterion", "passed", "evidence"],
)
st.dataframe(knock, hide_index=True)
for title, items in (("Next steps", summary.next_steps), ("Pivot options", summary.pivot_options)):
    if items:
        st.markdown(f"**{title}**  \n" + "  \n".join(f"• {md(i)}" for i in items))
pdf_download(sid, state, "validation-pdf")
competitor_map(sid, state)

blocker = VERDICT_STAGE.blocker(summary) if VERDICT_STAGE.blocker else None
if blocker is not None:  # NO-GO: it blocks Gate 1 until overridden with a reason there
    no_go = blocker[0]
    st.divider()
    done = [o for o in gate_of(state.gates, VERDICT_STAGE.phase).overrides if o.target == no_go]
    still_open = any(i.id == no_go for i in b.service.blocking(state, GATE))
    if done and not still_open:
        st.info(
            f"You chose to proceed anyway: “{md(done[-1].reason)}”. Approve Gate 1 to continue.",
            icon=":material/info:",
        )
    else:
        st.error(
            "The validation says NO-GO. The pipeline stops here unless you proceed anyway at "
            "Gate 1, with a reason that is logged there (or rework a stage, or reject).",
            icon=":material/block:",
        )
    link(f"gate_{GATE}", "Decide it in Gate 1's decision panel", ":material/looks_one:")
