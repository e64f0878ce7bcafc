"""Who decided at a gate: the decision record's lines for the gate (approved by … on …, overrides
with their reasons, anchor edits), under the gate's history. Reads
:meth:`Haytham.decisions`; writes nothing."""

from __future__ import annotations

import streamlit as st

from frontend_streamlit.components.context import Backend, attempt
from frontend_streamlit.components.safe_text import md


def render_decision_record(b: Backend, sid: str, gate: int) -> None:
    """The gate's decisions on record, oldest first; nothing when there are none."""
    found = attempt(lambda: b.service.decisions(sid)) or []
    lines = [d for d in found if d.gate == gate]
    if not lines:
        return
    st.markdown("**Decisions on record**")
    st.markdown("\n".join(f"- {md(d.sentence)}" for d in lines))
