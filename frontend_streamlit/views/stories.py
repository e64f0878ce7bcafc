"""Stories: the ordered, traceable stories with filters, and every export."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import attempt, backend, require_session, show_flash
from frontend_streamlit.components.notice import model_quality_notice
from frontend_streamlit.components.reports import pdf_download, recorded
from frontend_streamlit.components.safe_text import code, label, md
from frontend_streamlit.components.stale_banner import stale_banner
from haytham.reports.export import competitor_rows, export, stories
from haytham.stages import STORY_STAGE, StageSpec, architecture_decisions, capability_model
from haytham.state import SessionState, payload_of

DOWNLOADS = (
    ("Markdown", "markdown", "md", "text/markdown"),
    ("JSON", "json", "json", "application/json"),
    ("CSV", "csv", "csv", "text/csv"),
    ("Jira CSV", "jira", "jira.csv", "text/csv"),
    ("Linear CSV", "linear", "linear.csv", "text/csv"),
    ("Competitors CSV", "competitors", "competitors.csv", "text/csv"),
)
# the stages whose ids (CAP, DEC) a story implements
IMPLEMENTED: tuple[StageSpec, ...] = (capability_model.SPEC, architecture_decisions.SPEC)


def _defined_in(spec: StageSpec) -> str:
    return f"{spec.slug} (Gate {spec.phase.gate})"


GATE_PAGE = {_defined_in(spec): f"gate_{spec.phase.gate}" for spec in IMPLEMENTED}


def _targets(state: SessionState) -> dict[str, tuple[str, str]]:
    """CAP and DEC ids -> (name, where defined: the stage and its gate)."""
    out: dict[str, tuple[str, str]] = {}
    for spec in IMPLEMENTED:
        payload = payload_of(state.outputs, spec.slug)
        if payload is not None:
            out.update({i: (name, _defined_in(spec)) for i, name in payload.catalog().items()})
    return out


def _downloads(sid: str, state: SessionState, has_stories: bool) -> None:
    cols = st.columns(len(DOWNLOADS))
    for col, (title, fmt, ext, mime) in zip(cols, DOWNLOADS, strict=True):
        needs_stories = fmt in ("csv", "jira", "linear")
        ready = has_stories or not needs_stories
        if fmt == "competitors":
            ready = bool(competitor_rows(state))  # once market-context has mapped some
        data = attempt(partial(export, state, fmt)) if ready else ""
        col.download_button(
            title,
            data or "",
            file_name=f"{sid}.{ext}",
            mime=mime,
            key=f"download_{fmt}",
            disabled=not data,
            icon=":material/download:",
            on_click=recorded,
            args=(sid, fmt),
        )


b = backend()
sid = require_session(b)
st.title("Stories")
model_quality_notice(b, sid)
show_flash()
state = attempt(lambda: b.service.load_state(sid)) or SessionState()
stale_banner(b, sid, state=state)
items = stories(state)
st.caption(
    f"Session {code(sid)} · {len(items)} stories · appetite "
    f"{md(state.appetite or 'from the MVP scope')}"
)
_downloads(sid, state, bool(items))
left, right = st.columns(2)
with left:
    pdf_download(sid, state, "validation-pdf")
with right:
    pdf_download(sid, state, "pdf")
if not items:
    st.info(
        "No stories yet: they are written in the last phase (STORIES). Markdown and JSON "
        "exports above hold everything so far."
    )
    st.stop()

payload = payload_of(state.outputs, STORY_STAGE.slug)
for cycle in payload.cycles if payload is not None else []:
    st.error(
        f"Dependency cycle: {md(' → '.join([*cycle, cycle[0]]))}", icon=":material/sync_problem:"
    )

frame = pd.DataFrame(
    [
        {
            "order": n,
            "id": s["id"],
            "title": s["title"],
            "layer": s.get("layer", ""),
            "component": s.get("component", ""),
            "depends_on": ", ".join(s.get("depends_on", [])),
            "implements": ", ".join(s.get("implements", [])),
            "acceptance": len(s.get("acceptance_criteria", [])),
        }
        for n, s in enumerate(items, 1)
    ]
)
left, right = st.columns(2)
layers = left.multiselect("Layer", sorted(frame["layer"].unique()), key="filter_layer")
components = right.multiselect(
    "Component", sorted(frame["component"].unique()), key="filter_component"
)
keep = pd.Series(True, index=frame.index)
if layers:
    keep &= frame["layer"].isin(layers)
if components:
    keep &= frame["component"].isin(components)
shown = frame[keep]
st.dataframe(
    shown,
    hide_index=True,
    column_config={
        "order": st.column_config.NumberColumn("#", help="Dependency order (dependencies first)"),
        "acceptance": st.column_config.NumberColumn("criteria"),
    },
)
st.caption(f"{len(shown)} of {len(frame)} stories, in dependency order.")

st.subheader("Traceability")
targets = _targets(state)
trace = pd.DataFrame(
    [
        {
            "story": s["id"],
            "implements": t,
            "name": targets.get(t, ("", ""))[0],
            "defined in": targets.get(t, ("", "unknown id"))[1],
        }
        for s in items
        if s["id"] in set(shown["id"])
        for t in s["implements"]
    ]
)
if len(trace):
    trace["review"] = [
        f"./{GATE_PAGE[d]}?session={sid}" if d in GATE_PAGE else None for d in trace["defined in"]
    ]
st.dataframe(
    trace,
    hide_index=True,
    column_config={"review": st.column_config.LinkColumn("review", display_text="open the gate")},
)
unknown = sorted({t for t in trace["implements"] if t not in targets}) if len(trace) else []
if unknown:
    st.warning(
        f"Ids that no capability or decision defines: {md(', '.join(unknown))}",
        icon=":material/link_off:",
    )
for s in items:
    if s["id"] not in set(shown["id"]):
        continue
    box = st.expander(
        f"{label(s['id'])} · {label(s['title'])}", key=f"story_{s['id']}", on_change="rerun"
    )
    if not box.open:  # rendered only when opened
        continue
    with box:
        st.markdown(md(s.get("description", "")))
        for c in s.get("acceptance_criteria", []):
            st.markdown(f"☐ {md(c)}")
        links = [f"**{md(t)}** {md(targets.get(t, ('?', ''))[0])}" for t in s["implements"]]
        st.markdown("**Implements:** " + "; ".join(links))
        if s.get("depends_on"):
            st.markdown("**Depends on:** " + ", ".join(md(d) for d in s["depends_on"]))
