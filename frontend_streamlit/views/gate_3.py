"""Gate 3 — HOW: system traits, build/buy and architecture decisions."""

from frontend_streamlit.components.gate_view import render_gate

render_gate(3)
