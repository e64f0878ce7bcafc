"""One banner for every page of a session with stale checks.

A check is stale when the anchor or an output it checked changed after it ran
(``status()['stale_checks']``, :mod:`haytham.pipeline.staleness`). A Gate 1 clarification
re-checks its phase at once, so this appears only after a change nobody re-checked (an anchor
edit, a session from before re-checks). Each page says so, with the anchor changes, and offers
the two ways to renew them: re-check (verifier and validators only, no stage re-runs; it works on
a finished session too) or re-run from the first stale stage (``clear-from``, then the run).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from frontend_streamlit.components.context import Backend, attempt, flash, go
from frontend_streamlit.components.safe_text import md
from haytham.pipeline.gates import phase_for_gate
from haytham.stages import ANCHOR_SOURCE, get_stage, phase_stages
from haytham.state import SessionState

KEY = "rerun_stale_banner"


def stale_banner(
    b: Backend,
    sid: str,
    status: dict[str, Any] | None = None,
    state: SessionState | None = None,
) -> list[str]:
    """Show the banner when some stage is stale; returns the stale stages (in order)."""
    status = status if status is not None else attempt(lambda: b.service.status(sid))
    if status is None:  # could not be read: the error is shown already
        return []
    checks = list(status.get("stale_checks") or [])
    if not checks:
        return []
    stale = list(status.get("stale") or [])
    busy = b.worker.is_running(sid)
    changes = anchor_changes(state or attempt(lambda: b.service.load_state(sid)), stale)
    text = (
        f"**Stale checks: {md(status['stale_summary'])}.** What they say (passed, honored, "
        "findings, the invariants × stages matrix, the verdict's checks) is from before the "
        "change."
    )
    if changes:
        text += "  \n" + "  \n".join(f"• {md(c)}" for c in changes)
    st.warning(text, icon=":material/history:")
    row = st.container(horizontal=True)
    recheck = row.button(
        "Re-check",
        key=f"{KEY}_recheck",
        disabled=busy,
        icon=":material/fact_check:",
        help="Runs the verifier and validators again against the current anchor; no stage re-runs.",
    )
    first = get_stage(stale[0] if stale else checks[0]["stage"] or _first_of(checks[0]))
    clicked = row.button(
        f"Re-run from {first.title}",
        key=KEY,
        disabled=busy,
        icon=":material/replay:",
        help="Discards the stale stages and runs them again against the current anchor.",
    )
    if recheck:
        with st.spinner("Re-checking against the current anchor…"):
            done = attempt(lambda: b.service.recheck(sid))
        if done is not None:
            flash("Re-checked against the current anchor.")
            st.rerun()
    if clicked and attempt(lambda: b.service.clear_from(sid, first.slug)) is not None:
        b.worker.run(sid, f"re-run from {first.slug} (anchor changed)")
        go("run", sid)
    return stale


def _first_of(check: dict[str, Any]) -> str:
    """The first stage of a stale verification's phase."""
    return phase_stages(phase_for_gate(check["gate"]))[0].slug


def anchor_changes(state: SessionState | None, stale: list[str]) -> list[str]:
    """The reviewer's anchor changes made after the first stale stage ran (Gate 1's record)."""
    if state is None:
        return []
    record = state.gates.get(ANCHOR_SOURCE.phase.gate)
    meta = state.stage_meta.get(stale[0]) if stale else None
    since = meta.at if meta is not None and meta.at else ""
    if record is None:
        return []
    out: list[str] = []
    for c in record.clarifications:
        if c.at > since:
            out.append(f"Clarified {c.invariant}: {c.choice}")
    for e in record.edits:
        if e.at > since:
            out.append(
                f"Edited {e.target}: {e.before} → {e.after}"
                if e.kind == "edit_value"
                else f"Removed the non-goal: {e.before}"
            )
    return out
