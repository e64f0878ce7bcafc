"""Fidelity: how far the spec moved from the idea — divergence curve, invariants × stages, cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from components.context import attempt, backend, require_session, show_flash
from components.fidelity_data import compliance_matrix, divergence_frame
from components.progress import stage_rows

b = backend()
sid = require_session(b)
st.title("Fidelity")
show_flash()
state = attempt(lambda: b.service.load_state(sid)) or {}
status = attempt(lambda: b.service.status(sid)) or {"summary": {}}
summary = status["summary"]

st.subheader("Divergence curve")
curve = divergence_frame(summary.get("divergence") or {})
if curve.empty:
    st.info(
        "No divergence curve for this session: summary.json has no `divergence` (the "
        "embedding validators did not run, or no stage has been scored yet).",
        icon=":material/info:",
    )
else:
    st.line_chart(curve, x_label="stage", y_label="score (0-1)")
    st.caption(
        "**fidelity**: how well each stage expresses the anchor's invariants and identity, "
        "relative to how well the idea itself does (1.0 = as well as the idea); a falling "
        "fidelity curve means the spec is drifting. **idea** / **anchor**: plain cosine "
        "similarity of the stage's text to the idea and to the anchor (they fall for terse "
        "stages too)."
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
    cost = pd.DataFrame(rows)[
        ["stage", "model_calls", "input_tokens", "output_tokens", "elapsed_s"]
    ]
    st.dataframe(cost, hide_index=True, height=35 * (len(cost) + 1) + 3)
    st.bar_chart(
        cost,
        x="stage",
        y=["input_tokens", "output_tokens"],
        stack=True,
        sort=False,
        y_label="tokens",
    )  # pipeline order, not alphabetical
