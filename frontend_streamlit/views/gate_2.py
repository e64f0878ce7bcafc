"""Gate 2 — WHAT: MVP scope and capabilities."""

from frontend_streamlit.components.gate_view import render_gate

render_gate(2)
