"""Run: the selected session's background run, stage by stage, refreshed while it runs."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from frontend_streamlit.components.context import attempt, backend, go, require_session, show_flash
from frontend_streamlit.components.intake_form import STOPPED, intake_panel
from frontend_streamlit.components.local_model import local_model_step
from frontend_streamlit.components.notice import model_quality_notice
from frontend_streamlit.components.pipeline_graph import readable_dot
from frontend_streamlit.components.progress import (
    STAGE_COUNT,
    describe,
    done_count,
    inherited_steps,
    pretty_status,
    progress_bar,
    readable_stream,
    stage_table,
    totals_line,
)
from frontend_streamlit.components.safe_text import code, md, no_paths
from frontend_streamlit.components.stale_banner import stale_banner
from haytham.models.local import READING
from haytham.runs.worker import Job, replay_miss_text
from haytham.stages import ANCHOR_AGENT, BY_SLUG

REFRESH_S = 1.0
STREAM_CHARS = 240  # the tail of the streamed text shown while a stage writes
# A running box is an expander with a fixed icon: st.status's spinner turns into a tick in the
# browser as soon as the page's script run ends, which read as "done" while the run went on.
RUNNING_ICON = ":material/progress_activity:"
QUEUED_ICON = ":material/schedule:"
GATE_HINT = {
    1: "review the concept anchor and the verdict",
    2: "review the MVP scope and capabilities",
    3: "review the technical design",
    4: "review the stories",
}

b = backend()
sid = require_session(b)
st.title("Run")
model_quality_notice(b, sid)
show_flash()
stale_banner(b, sid)
was_running = b.worker.is_running(sid)


@st.fragment(run_every=REFRESH_S if was_running else None)
def progress() -> None:
    """The run's progress: its bar, the box saying what runs now and the step table; re-drawn
    every second while the run is alive."""
    # one snapshot (job, status, stage running): in team mode re-read only when the session
    # changed, so an open page costs the database nothing while nothing happens
    seen = attempt(lambda: b.worker.view(sid, lambda: b.service.status(sid)))
    if seen is None:
        return
    job, status, running = seen
    if was_running and (job is None or not job.alive):
        st.rerun(scope="app")  # the run ended: redraw the whole page once, without polling
    summary = status["summary"]
    idea = " ".join(status["idea"].split())
    st.caption(f"Session {code(sid)} · {md(idea[:160])}{'…' if len(idea) > 160 else ''}")
    parent = summary.get("forked_from")
    if parent:
        kept = inherited_steps(summary)
        st.caption(
            f"Forked from {code(parent)}: "
            + (
                f"{len(kept)} steps inherited, done there ({md(', '.join(kept))}); "
                if kept
                else "nothing inherited; "
            )
            + "the rest run in this session."
        )
    done, total = done_count(summary)
    estimates = b.worker.estimates(exclude=sid)
    alive = job is not None and job.alive
    live = b.service.live_call(sid) if alive else None
    fraction, bar_text = progress_bar(summary, running, estimates)
    st.progress(fraction, text=bar_text)
    table = {
        "estimates": estimates,
        "gates": status.get("gates") or {},
        "waiting_at": status.get("gate"),
        "stale": status.get("stale_rows") or [],
    }
    box: DeltaGenerator  # an expander, or a status box for a finished or failed run
    if job is not None and job.alive and job.state == "queued":
        label = f"Queued · {job.elapsed():.0f} s · waiting for a worker to take it"
        if b.worker.live_workers() == 0:
            label += " · no worker is running: start one with `haytham worker`"
        box = st.expander(label, expanded=True, icon=QUEUED_ICON)
    elif job is not None and job.alive:
        label = f"Running · {job.elapsed():.0f} s"
        preparing = local_model_step(b.service.models.server)
        if preparing is not None:
            label += f" · {preparing}"
        if running is not None:
            where = describe(running.stage)  # the step's name as the table says it
            label += (
                f" · now: {md(where[1] if where else running.stage)} ({running.elapsed():.0f} s)"
            )
            if running.waiting_since is not None:
                label += (
                    f" · waiting for a provider slot ({running.waited():.0f} s): other "
                    "sessions' calls use every slot this deployment allows"
                )
            elif live is not None and live.tokens:
                label += f" · ≈{live.tokens:,} tokens received"
        box = st.expander(label, expanded=True, icon=RUNNING_ICON)
    elif job is not None and job.state == "failed" or status.get("state") == "failed":
        box = st.status("Stopped with an error", state="error", expanded=True)
    elif status.get("state") in ("waiting", "done"):
        label = f"{done} of {total} steps done · {md(pretty_status(status['status']))}"
        box = st.status(label, state="complete", expanded=True)
    elif status.get("state") == "running":  # another process (the CLI) is running it
        label = f"Running in another process · {done} of {total} steps done"
        box = st.expander(label, expanded=True, icon=RUNNING_ICON)
    else:  # stopped, rejected: no tick, no spinner
        label = f"{done} of {total} steps done · {md(pretty_status(status['status']))}"
        if status.get("state") == "stopped":
            label = f"Not running · {done} of {total} steps done"
        box = st.expander(label, expanded=True, icon=":material/pause_circle:")
    with box:
        if live is not None and live.text:  # what the stage is writing, as it streams
            where = describe(live.row)
            who = md(where[1] if where else live.row)
            if live.text.startswith(READING):  # the local model reads its prompt first
                st.caption(f"{who} is {md(live.text)}")
            else:
                tail = readable_stream(live.text)[-STREAM_CHARS:]
                st.caption(f"{who} is writing: …{md(tail)}")
        stage_table(summary, job, running, **table)
        st.caption(totals_line(summary, calling=running is not None))
    _next_step(status, job)


def _agent_of(status: dict[str, Any]) -> str | None:
    """The failed step's agent (a stage's or the anchor's), for the replay check."""
    for slug, row in (status["summary"].get("stages") or {}).items():
        if row.get("status") == "failed" and (slug in BY_SLUG or slug == ANCHOR_AGENT):
            return slug
    return None


def _next_step(status: dict[str, Any], job: Job | None) -> None:
    if job is not None and job.alive:
        st.info(
            "The pipeline runs in the background: you can leave this page and come back.",
            icon=":material/hourglass_top:",
        )
        return
    error = job.error if job is not None and job.state == "failed" else status.get("last_error")
    if error:
        shown = replay_miss_text(error) or no_paths(error)
        st.error(f"The run stopped: {md(shown)}", icon=":material/error:")
        # a replay that missed stops at the same step again unless the cassette changed
        agent = _agent_of(status) if b.service.settings.provider == "replay" else None
        fit = b.worker.replay_fit(b.service.load_state(sid).idea, agent) if agent else None
        blocked = fit is not None and not fit.ok
        if st.button(
            "Retry / resume",
            type="primary",
            key="resume_after_error",
            disabled=blocked,
            help="The replay cassette has no answer for this step; a retry would stop here again."
            if blocked
            else None,
        ):
            attempt(lambda: b.worker.run(sid, "resume"))
            st.rerun()
        if blocked:
            st.caption(
                "Retry is off: the replay cassette has no recorded answer for this step, so it "
                "would stop here again."
            )
        return
    gate = status.get("gate")
    if status["status"] in STOPPED:  # intake asks its questions, or found no idea
        intake_panel(b, sid)
    elif gate:
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
        f"{STAGE_COUNT.capitalize()}, in four phases; after each phase a verifier checks it "
        "against the concept anchor (and may send a stage back), then a gate waits for your "
        "decision. Dashed "
        "edges are taken on a condition (a verifier's or a reviewer's route)."
    )
    st.graphviz_chart(readable_dot(b.service.graph_dot()), use_container_width=True)
