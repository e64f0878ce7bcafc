"""Verdict: GO / NO-GO / PIVOT with the scorecard; NO-GO stops unless overridden with a reason."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from components.context import (
    attempt,
    backend,
    flash,
    link,
    require_session,
    show_error,
    show_flash,
)
from components.safe_text import badge_label, md

from haytham.pipeline.gates import open_blocking
from haytham.stages import Phase

NO_GO = "verdict:NO-GO"
STYLE = {
    "GO": ("green", ":material/rocket_launch:"),
    "NO-GO": ("red", ":material/block:"),
    "PIVOT": ("orange", ":material/alt_route:"),
}

b = backend()
sid = require_session(b)
st.title("Verdict")
show_flash()
state = attempt(lambda: b.service.load_state(sid)) or {}
summary = ((state.get("outputs") or {}).get("validation-summary") or {}).get("payload")
if not summary:
    st.info(
        "No verdict yet: it comes from the validation summary, the last stage of the WHY phase."
    )
    link("run", "Watch the run", ":material/play_circle:")
    st.stop()

verdict = summary.get("verdict") or "?"
color, icon = STYLE.get(verdict, ("gray", ":material/help:"))
# the verdict is decided by code (GO, NO-GO or PIVOT); anything else in the file is escaped
st.badge(verdict if verdict in STYLE else badge_label(verdict), color=color, icon=icon)  # type: ignore[arg-type]
st.markdown(
    f"**Why:** {md(summary.get('verdict_reason') or '')} · **risk level:** "
    f"{md(summary.get('risk_level') or 'unknown')}"
)
st.markdown(md(summary.get("executive_summary", "")))

st.subheader("Scorecard")
dims = pd.DataFrame(summary.get("dimensions") or [], columns=["name", "score", "evidence"])
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
    summary.get("knockout_criteria") or [], columns=["criterion", "passed", "evidence"]
)
st.dataframe(knock, hide_index=True)
for title, key in (("Next steps", "next_steps"), ("Pivot options", "pivot_options")):
    items = summary.get(key) or []
    if items:
        st.markdown(f"**{title}**  \n" + "  \n".join(f"• {md(i)}" for i in items))

if verdict == "NO-GO":
    st.divider()
    record = (state.get("gates") or {}).get("1") or {}
    done = [o for o in record.get("overrides", []) if o.get("target") == NO_GO]
    still_open = any(i.id == NO_GO for i in open_blocking(state, Phase.WHY))
    waiting = state.get("status") == "waiting_gate_1" and not b.worker.is_running(sid)
    if done and not still_open:
        st.info(
            f"You chose to proceed anyway: “{md(done[-1]['reason'])}”. Approve Gate 1 to continue.",
            icon=":material/info:",
        )
        link("gate_1", "Go to Gate 1", ":material/looks_one:")
    elif waiting:
        st.error(
            "The validation says NO-GO. The pipeline stops here unless you proceed anyway, "
            "with a reason that is logged at Gate 1.",
            icon=":material/block:",
        )
        reason = st.text_area("Why proceed anyway? (required)", key="nogo_reason")
        if st.button("Proceed anyway", type="primary", key="proceed_anyway"):
            if not (reason or "").strip():
                st.error("Proceeding past NO-GO needs a reason.", icon=":material/error:")
            else:
                try:
                    b.service.decide(
                        sid,
                        1,
                        {"kind": "override", "target": NO_GO, "reason": reason},
                        continue_run=False,
                    )
                except Exception as exc:
                    show_error(exc)
                else:
                    flash("NO-GO overridden; approve Gate 1 to continue.")
                    st.rerun()
    else:
        st.caption("The session is not waiting at Gate 1, so the verdict cannot be overridden now.")
