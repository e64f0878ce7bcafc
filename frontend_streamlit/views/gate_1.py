"""Gate 1 — WHY: idea validation, the concept anchor and its clarification."""

from frontend_streamlit.components.gate_view import render_gate

render_gate(1)
