"""One banner for every page of a session whose anchor changed after later stages ran.

A clarification or an edit at Gate 1 changes the anchor; the stages that ran with the earlier one
(``status()['stale']``, from each stage's anchor digest) and every check made on them — the
phase verification, the validator findings, the invariants × stages matrix, the verdict — still
follow the old values. Each page says so, with the anchor changes, and offers the one action that
redoes them: re-run from the first stale stage (``clear-from``, then the background run).
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from components.context import Backend, attempt, go
from components.safe_text import md

from haytham.pipeline.state import SessionState
from haytham.stages import ANCHOR_SOURCE, get_stage

KEY = "rerun_stale_banner"


def stale_banner(
    b: Backend,
    sid: str,
    status: dict[str, Any] | None = None,
    state: SessionState | None = None,
) -> list[str]:
    """Show the banner when some stage is stale; returns the stale stages (in order)."""
    status = status if status is not None else attempt(lambda: b.service.status(sid))
    stale = list((status or {}).get("stale") or [])
    if not stale:
        return []
    busy = b.worker.is_running(sid)
    names = ", ".join(get_stage(s).title for s in stale)
    changes = anchor_changes(state or attempt(lambda: b.service.load_state(sid)), stale)
    text = (
        f"**The concept anchor changed after these stages ran: {md(names)}.** Their outputs and "
        "the checks made on them (verification, findings, the invariants × stages matrix, the "
        "verdict) still follow the earlier anchor."
    )
    if changes:
        text += "  \n" + "  \n".join(f"• {md(c)}" for c in changes)
    st.warning(text, icon=":material/history:")
    first = get_stage(stale[0])
    clicked = st.button(
        f"Re-run from {first.title}",
        key=KEY,
        disabled=busy,
        icon=":material/replay:",
        help="Discards the stale stages and runs them again against the current anchor.",
    )
    if clicked and attempt(lambda: b.service.clear_from(sid, first.slug)) is not None:
        b.worker.run(sid, f"re-run from {first.slug} (anchor changed)")
        go("run", sid)
    return stale


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
