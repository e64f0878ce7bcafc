"""Haytham's review UI: navigation only. Each page is a file in ``views/``; all work goes
through :class:`haytham.runs.service.Haytham` (see docs/ui.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
# `streamlit run frontend_streamlit/app.py` puts this folder on the path, not the repository: the
# repository's root lets this script and the pages import the UI as the package it is.
if str(HERE.parent) not in sys.path:
    sys.path.append(str(HERE.parent))

from frontend_streamlit.components.context import (  # noqa: E402 — path above
    backend,
    failures,
    require_identity,
    selected_session,
)
from frontend_streamlit.components.notice import model_quality_notice  # noqa: E402

# The session pages that get the model-quality notice from here, above their content (Run,
# Stories and Fidelity show it under their title themselves).
NOTICE_FROM_APP = {"gate_1", "gate_2", "gate_3", "gate_4", "verdict"}

# A bundled image, served by the app itself: a Material or emoji icon makes the browser fetch
# the favicon from an outside host on every page view (it leaks usage and fails offline).
ICON = HERE / "static" / "icon.png"
st.set_page_config(page_title="Haytham", page_icon=str(ICON), layout="wide")

pages = {
    "Start": [
        st.Page("views/new_idea.py", title="New idea", icon=":material/lightbulb:", default=True),
        st.Page("views/run.py", title="Run", icon=":material/play_circle:"),
        st.Page("views/sessions.py", title="Sessions", icon=":material/folder_open:"),
        st.Page("views/providers.py", title="Model provider", icon=":material/tune:"),
    ],
    "Decision gates": [
        st.Page("views/gate_1.py", title="Gate 1 · WHY", icon=":material/looks_one:"),
        st.Page("views/verdict.py", title="Verdict", icon=":material/gavel:"),
        st.Page("views/gate_2.py", title="Gate 2 · WHAT", icon=":material/looks_two:"),
        st.Page("views/gate_3.py", title="Gate 3 · HOW", icon=":material/looks_3:"),
        st.Page("views/gate_4.py", title="Gate 4 · STORIES", icon=":material/looks_4:"),
    ],
    "Results": [
        st.Page("views/stories.py", title="Stories", icon=":material/view_list:"),
        st.Page("views/fidelity.py", title="Fidelity", icon=":material/insights:"),
        st.Page("views/evaluations.py", title="Evaluations", icon=":material/fact_check:"),
    ],
}

require_identity()  # team mode: sign-in (or the refusal) before any page shows
page = st.navigation(pages)
with failures():  # a bug in a page shows one sentence (the traceback goes to the server log)
    if page.url_path in NOTICE_FROM_APP:
        model_quality_notice(backend(), selected_session())
    page.run()
