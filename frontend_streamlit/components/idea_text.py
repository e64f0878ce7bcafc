"""The founder's idea as a person reads it: their text, then their answers to the intake
questions as a list (question, answer), never the Markdown section the stages read (issue 28)."""

from __future__ import annotations

import streamlit as st

from frontend_streamlit.components.safe_text import md
from haytham.idea.intake import split_clarifications


def show_idea(idea: str) -> None:
    """``idea`` shown literally; its "Founder's clarifications" as a readable list."""
    text, pairs = split_clarifications(idea)
    st.markdown(md(text))
    if pairs:
        st.markdown("**Your answers to the intake questions**")
        st.markdown("\n".join(f"{n}. *{md(q)}*  \n{md(a)}" for n, (q, a) in enumerate(pairs, 1)))
