"""Gate 4 — STORIES: the implementation stories."""

from frontend_streamlit.components.gate_view import render_gate

render_gate(4)
