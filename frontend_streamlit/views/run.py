"""Run: the selected session's background run, stage by stage, refreshed while it runs."""

from __future__ import annotations

from typing import Any

import streamlit as st
from components.context import attempt, backend, go, require_session, show_flash
from components.progress import done_count, pretty_status, stage_table, totals_line
from components.safe_text import code, md, no_paths
from components.stale_banner import stale_banner

from haytham.worker import Job

REFRESH_S = 1.0
GATE_HINT = {
    1: "review the concept anchor and the verdict",
    2: "review the MVP scope and capabilities",
    3: "review the technical design",
    4: "review the stories",
}

b = backend()
sid = require_session(b)
st.title("Run")
show_flash()
stale_banner(b, sid)
was_running = b.worker.is_running(sid)


@st.fragment(run_every=REFRESH_S if was_running else None)
def progress() -> None:
    job = b.worker.job(sid)
    status = attempt(lambda: b.service.status(sid))
    if status is None:
        return
    if was_running and (job is None or not job.alive):
        st.rerun(scope="app")  # the run ended: redraw the whole page once, without polling
    summary = status["summary"]
    idea = " ".join(status["idea"].split())
    st.caption(f"Session {code(sid)} · {md(idea[:160])}{'…' if len(idea) > 160 else ''}")
    done, total = done_count(summary)
    running = b.worker.current_stage(sid)
    alive = job is not None and job.alive
    if alive:
        label = f"Running · {job.elapsed():.0f} s"
        if running is not None:
            label += f" · now: {md(running.stage)} ({running.elapsed():.0f} s)"
        state = "running"
    elif job is not None and job.state == "failed":
        label, state = "Stopped with an error", "error"
    else:
        label = f"{done} of {total} stages done · {md(pretty_status(status['status']))}"
        state = "complete"
    st.progress(done / total if total else 0.0, text=f"{done} / {total} stages")
    with st.status(label, state=state, expanded=True):
        stage_table(summary, job, running)
        st.caption(totals_line(summary))
    _next_step(status, job)


def _next_step(status: dict[str, Any], job: Job | None) -> None:
    if job is not None and job.alive:
        st.info(
            "The pipeline runs in the background: you can leave this page and come back.",
            icon=":material/hourglass_top:",
        )
        return
    error = job.error if job is not None and job.state == "failed" else status.get("last_error")
    if error:
        st.error(f"The run stopped: {md(no_paths(error))}", icon=":material/error:")
        if st.button("Retry / resume", type="primary", key="resume_after_error"):
            attempt(lambda: b.worker.run(sid, "resume"))
            st.rerun()
        return
    gate = status.get("gate")
    if gate:
        st.success(f"Waiting at **Gate {gate}**: {GATE_HINT[gate]}.", icon=":material/how_to_reg:")
        if gate == 1 and status.get("open_ambiguities"):
            st.warning(
                f"{len(status['open_ambiguities'])} invariant(s) need clarification "
                "before Gate 1 can be approved.",
                icon=":material/help:",
            )
        if st.button(f"Review Gate {gate}", type="primary", key="to_gate"):
            go(f"gate_{gate}", sid)
    elif status["status"] == "done":
        st.success("Finished: all four gates approved.", icon=":material/task_alt:")
        c1, c2 = st.columns(2)
        if c1.button("Stories and exports", key="to_stories"):
            go("stories", sid)
        if c2.button("Fidelity", key="to_fidelity"):
            go("fidelity", sid)
    elif status["status"] == "rejected":
        st.info(
            "This session was rejected at a gate; fork it from a stage on Sessions to try "
            "another direction.",
            icon=":material/block:",
        )
    else:
        st.info(
            "This session is not running (it was interrupted or not started yet).",
            icon=":material/pause_circle:",
        )
        if st.button("Resume", type="primary", key="resume"):
            attempt(lambda: b.worker.run(sid, "resume"))
            st.rerun()


progress()
with st.expander("The pipeline graph", icon=":material/account_tree:"):
    st.caption(
        "Ten stages in four phases; after each phase a verifier checks it against the concept "
        "anchor (and may send a stage back), then a gate waits for your decision. Dashed "
        "edges are taken on a condition (a verifier's or a reviewer's route)."
    )
    st.graphviz_chart(b.service.graph_dot(), use_container_width=True)
