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
from components.stale_banner import stale_banner

from haytham.pipeline.state import SessionState, gate_of, payload_of
from haytham.stages import VERDICT_STAGE

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
    [d.model_dump() for d in summary.dimensions], columns=["name", "score", "evidence"]
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

blocker = VERDICT_STAGE.blocker(summary) if VERDICT_STAGE.blocker else None
if blocker is not None:  # NO-GO: it blocks its gate until overridden with a reason
    no_go = blocker[0]
    st.divider()
    done = [o for o in gate_of(state.gates, VERDICT_STAGE.phase).overrides if o.target == no_go]
    still_open = any(i.id == no_go for i in b.service.blocking(state, GATE))
    waiting = state.status.gate == GATE and not b.worker.is_running(sid)
    if done and not still_open:
        st.info(
            f"You chose to proceed anyway: “{md(done[-1].reason)}”. Approve Gate 1 to continue.",
            icon=":material/info:",
        )
        link(f"gate_{GATE}", "Go to Gate 1", ":material/looks_one:")
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
                        GATE,
                        {"kind": "override", "target": no_go, "reason": reason},
                        continue_run=False,
                    )
                except Exception as exc:
                    show_error(exc)
                else:
                    flash("NO-GO overridden; approve Gate 1 to continue.")
                    st.rerun()
    else:
        st.caption("The session is not waiting at Gate 1, so the verdict cannot be overridden now.")
