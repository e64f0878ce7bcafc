"""Fidelity: how far the spec moved from the idea — divergence curve, invariants × stages, cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import attempt, backend, require_session, show_flash
from frontend_streamlit.components.fidelity_data import compliance_matrix, divergence_frame
from frontend_streamlit.components.notice import model_quality_notice
from frontend_streamlit.components.progress import duration, stage_rows
from frontend_streamlit.components.stale_banner import stale_banner
from haytham.state import SessionState

COST_COLUMNS = {
    "model_calls": "model calls",
    "input_tokens": "tokens in",
    "output_tokens": "tokens out",
}

b = backend()
sid = require_session(b)
st.title("Fidelity")
model_quality_notice(b, sid)
show_flash()
state = attempt(lambda: b.service.load_state(sid)) or SessionState()
status = attempt(lambda: b.service.status(sid)) or {"summary": {}}
stale_banner(b, sid, status, state)
summary = status["summary"]

st.subheader("Divergence curve")
curve = divergence_frame(summary.get("divergence") or {})
if curve.empty:
    st.info(
        "No divergence curve for this session: no stage has a fidelity score (the "
        "embedding validators did not run, or no stage has been scored yet).",
        icon=":material/info:",
    )
else:
    if "fidelity" in curve:
        st.line_chart(curve[["fidelity"]], x_label="stage", y_label="fidelity")
        st.caption(
            "**Fidelity**: how much more each stage reads like this idea than like the generic "
            "product the anchor rules out (its non-goals and identity notes). Above 0 the stage "
            "is about this idea; below 0 it reads generic. Terse stages stay above 0; a "
            "genericized one falls below."
        )
    similarity = curve.drop(columns=["fidelity"], errors="ignore")
    st.line_chart(similarity, x_label="stage", y_label="cosine similarity")
    st.caption(
        "Plain cosine similarity of each stage's text to the idea and to the concept anchor; "
        "it falls for terse stages too, so read it with the fidelity curve."
    )

st.subheader("Invariants × stages")
matrix = compliance_matrix(state)
if matrix.empty:
    st.info("No concept anchor or stage outputs yet.")
else:
    st.dataframe(matrix)
    st.caption(
        "From each stage's own anchor-compliance report; a verifier violation or a "
        "validator finding (warning or worse) naming the invariant marks it violated. "
        "“Not mentioned” may mean the invariant was dropped."
    )

st.subheader("Model calls and tokens per stage")
rows = stage_rows(summary)
if rows:
    cost = pd.DataFrame(rows)[["stage", "model_calls", "input_tokens", "output_tokens"]]
    cost = cost.rename(columns=COST_COLUMNS)
    # a step that has not run here has no time: said in words, never an empty "None" cell
    cost["time"] = [
        "not run here" if r["elapsed_s"] is None else duration(r["elapsed_s"]) for r in rows
    ]
    st.dataframe(cost, hide_index=True, height=35 * (len(cost) + 1) + 3)
    st.bar_chart(
        cost,
        x="stage",
        y=["tokens in", "tokens out"],
        stack=True,
        sort=False,
        y_label="tokens",
    )  # pipeline order, not alphabetical
