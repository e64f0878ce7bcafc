"""The model-quality notice: shown on every page of a session run on the bundled local model."""

from __future__ import annotations

import streamlit as st

from frontend_streamlit.components.context import Backend
from haytham.errors import HaythamError

LOCAL_NOTICE = (
    "**Demo-quality text.** This session was run on the bundled local model (Gemma 3 270M), a "
    "tiny model: its outputs here are often wrong or made up (names, numbers, criteria), so "
    "read them as a walk-through of the flow, not as an analysis of the idea. For real results, "
    "start the idea again with a real provider (HAYTHAM_PROVIDER=anthropic, bedrock, openai or "
    "ollama; see docs/providers.md)."
)


def model_quality_notice(b: Backend, session_id: str | None) -> None:
    """One warning line when ``session_id``'s outputs come from the local model (or, before its
    first model call, when it will run on it); nothing otherwise."""
    if not session_id:
        return
    try:
        provider = b.worker.provider_of(session_id)
    except HaythamError:  # an unreadable session: its page says why
        return
    if provider == "local":
        st.warning(LOCAL_NOTICE, icon=":material/science:")
