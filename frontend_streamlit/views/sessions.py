"""Sessions: every session with its idea, status, current gate and last update; open, resume,
fork from a stage, delete (with confirmation)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from frontend_streamlit.components.context import (
    Backend,
    attempt,
    backend,
    flash,
    go,
    select_session,
    selected_session,
    show_error,
    show_flash,
)
from frontend_streamlit.components.progress import pretty_status
from frontend_streamlit.components.safe_text import code, no_paths
from haytham.stages import STAGES
from haytham.state import RunStatus

_STATUSES = {s.value for s in RunStatus}
PICK = "sessions_pick"
PICK_FOLLOWS = "sessions_pick_follows"  # the tab's session the picker last followed


def _row(b: Backend, sid: str) -> dict[str, Any]:
    updated = datetime.fromisoformat(b.service.updated_at(sid))
    row: dict[str, Any] = {
        "session": sid,
        "idea": "",
        "status": "",
        "gate": None,
        "updated": updated,
        "running": False,
        "forked_from": None,
    }
    try:
        st_ = b.service.status(sid)
    except Exception as exc:  # a broken session is listed with its problem, not hidden
        row["status"] = f"unreadable: {no_paths(str(exc))}"
        return row
    idea = " ".join(st_["idea"].split())
    row.update(
        idea=idea[:90] + ("…" if len(idea) > 90 else ""),
        status=pretty_status(st_["status"]),
        gate=st_["gate"],
        running=b.worker.is_running(sid),
        forked_from=st_["summary"].get("forked_from"),
    )
    return row


def _listed(b: Backend, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the shared database's one-query listing, and which sessions run now (one
    more query): the page costs the same few queries with 5 sessions or 500."""
    running = set(b.worker.running())
    rows = []
    for r in found:
        status = r["status"] or RunStatus.RUNNING.value  # nothing projected yet: just created
        gate = RunStatus(status).gate if status in _STATUSES else None
        idea = " ".join(r["idea"].split())
        rows.append(
            {
                "session": r["session"],
                "idea": idea[:90] + ("…" if len(idea) > 90 else ""),
                "status": pretty_status(status),
                "gate": gate,
                "updated": datetime.fromisoformat(r["updated"]),
                "running": r["session"] in running,
                "forked_from": r["forked_from"],
            }
        )
    return rows


def _open(b: Backend, sid: str, status: str, gate: int | None) -> None:
    select_session(sid)
    go(f"gate_{gate}" if gate and not b.worker.is_running(sid) else "run", sid)


b = backend()
st.title("Sessions")
show_flash()
listing = attempt(b.service.session_rows)
ids = [r["session"] for r in listing] if listing is not None else attempt(b.service.list_sessions)
if not ids:
    st.info("No sessions yet: start one from a new idea.")
    st.stop()
rows = sorted(
    _listed(b, listing) if listing is not None else (_row(b, sid) for sid in ids),
    key=lambda r: r["updated"],
    reverse=True,
)
frame = pd.DataFrame(rows)
st.dataframe(
    frame,
    hide_index=True,
    column_config={
        "updated": st.column_config.DatetimeColumn("updated", format="YYYY-MM-DD HH:mm:ss"),
        "gate": st.column_config.NumberColumn("gate", help="The gate it is waiting at"),
        "running": st.column_config.CheckboxColumn("running"),
        "forked_from": st.column_config.TextColumn("forked from"),
    },
)
st.caption(
    "Each browser tab keeps its own session (in the URL: `?session=<id>`), so several "
    "sessions can be open side by side."
)

current = selected_session()
order = [r["session"] for r in rows]
if current in order and st.session_state.get(PICK_FOLLOWS) != current:
    st.session_state[PICK] = current  # the picker follows the tab's session (a new fork …)
    st.session_state[PICK_FOLLOWS] = current
sid = st.selectbox(
    "Session", order, index=order.index(current) if current in order else 0, key=PICK
)
row = next(r for r in rows if r["session"] == sid)
st.markdown(f"[Open in a new tab](./run?session={sid})")

c_open, c_resume = st.columns(2)
if c_open.button("Open", type="primary", key="open_session"):
    _open(b, sid, row["status"], row["gate"])
resumable = row["status"] == "running" and not row["running"]  # interrupted or forked
if c_resume.button(
    "Resume",
    key="resume_session",
    disabled=not resumable,
    help="Continue an interrupted run (sessions at a gate wait for a decision).",
):
    try:
        b.worker.run(sid, "resume")
    except Exception as exc:
        show_error(exc)
    else:
        select_session(sid)
        go("run", sid)

with st.expander("Fork from a stage"):
    stages = {s.slug: f"{s.number}. {s.title}" for s in STAGES}
    slug = st.selectbox(
        "Redo from", list(stages), format_func=lambda s: stages[s], key="fork_stage"
    )
    st.caption(
        "The new session keeps this one's work before that stage (shown as inherited), opens, "
        "and runs on from that stage in the background."
    )
    if st.button("Fork", key="fork"):
        try:
            new = b.worker.fork(sid, slug)
        except Exception as exc:
            show_error(exc)
        else:
            select_session(new)
            flash(f"Forked {code(sid)} from {code(slug)} as {code(new)}; its run has started.")
            go("run", new)

with st.expander("Delete"):
    if row["running"]:
        st.caption("A run of this session is in progress; wait for it to stop.")
    sure = st.checkbox(f"Yes, delete {sid} and all its files", key=f"delete_sure_{sid}")
    if st.button("Delete session", key="delete", disabled=not sure or row["running"]):
        try:
            b.service.delete_session(sid)
        except Exception as exc:
            show_error(exc)
        else:
            b.worker.forget(sid)
            if current == sid:
                select_session(None)
            flash(f"Deleted {sid}.")
            st.rerun()
