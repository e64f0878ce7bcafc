"""Gate 1 anchor review (ADR-022 1c): the goal and the settled invariants with their sources.

High-confidence invariants show one line each with their source quote and confidence. The
ambiguous ones (confidence < 0.7) are blocking items of Gate 1's decision panel
(``components.decision_panel``), where they are clarified. The reviewer can also correct an
invariant's value or remove a non-goal; each change is logged in the gate record.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from frontend_streamlit.components.context import Backend, flash, show_error
from frontend_streamlit.components.safe_text import md, name
from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.stages import ANCHOR_SOURCE
from haytham.state import SessionState


def _command(b: Backend, sid: str, command: dict[str, Any], done: str) -> None:
    try:
        b.service.decide(sid, 1, command, continue_run=False)
    except Exception as exc:
        show_error(exc)
    else:
        flash(done)
        st.rerun()


def _confident(inv: Invariant) -> str:
    """One line per invariant that needs no clarification (the ambiguous ones are in the
    decision panel), saying where its value came from: the founder's words (with the
    extractor's confidence), your clarification (who, when), --auto-approve (unconfirmed), or
    open (no value: never shown as one, never as confident)."""
    source = f"Source: “{md(inv.source)}”{grounding(inv)}"
    if inv.is_open:
        return (
            f":gray[○] **{name(inv.property)}** — :gray-badge[open] not decided: your idea does "
            f"not say, so later stages keep it open  \n{source} · left open{_by(inv)}"
        )
    if inv.provenance == "reviewer":
        return (
            f":green[✔] **{name(inv.property)}** = {md(inv.value)}  \n"
            f"{source} · clarified{_by(inv)}"
        )
    if inv.provenance == "auto":
        return (
            f":orange[●] **{name(inv.property)}** = {md(inv.value)}  \n{source} · "
            f"auto-chosen by --auto-approve (first option), not confirmed by anyone · "
            f"{round(inv.confidence * 100)}% confident"
        )
    mark = ":blue[●]" if inv.grounded is False else ":green[✔]"
    return (
        f"{mark} **{name(inv.property)}** = {md(inv.value)}  \n"
        f"{source} · {round(inv.confidence * 100)}% confident (from your words)"
    )


def _by(inv: Invariant) -> str:
    """`` by ana on 2026-11-27`` from the invariant's decision, where known."""
    who = f" by {md(inv.decided_by)}" if inv.decided_by else ""
    return who + (f" on {md(inv.decided_at[:10])}" if inv.decided_at else "")


def grounding(inv: Invariant) -> str:
    """How the source quote was checked against the idea (nothing for older sessions)."""
    if inv.grounded is None:
        return ""
    return " (found in your idea)" if inv.grounded else " (**not found in your idea**)"


def render_anchor(b: Backend, sid: str, state: SessionState, editable: bool) -> None:
    """The anchor at Gate 1: the goal and the settled invariants; the ambiguous ones are
    clarified in the decision panel. ``editable`` when the session is waiting here."""
    anchor = state.anchor
    if anchor is None:
        st.info(
            f"No concept anchor yet: it is extracted right after {ANCHOR_SOURCE.title.lower()}."
        )
        return
    pending = anchor.open_ambiguities()
    settled = [i for i in anchor.invariants if not i.is_ambiguous]
    st.subheader("Concept anchor")
    st.markdown(f"**Goal:** {md(anchor.intent.goal)}")
    if pending:
        st.caption(
            f"{len(settled)} invariant(s) settled; {len(pending)} wait for your clarification "
            "in the decision panel below. Check them against your idea: they constrain every "
            "later stage."
        )
    else:
        st.caption(
            "No invariant is waiting for a clarification. Check them against your idea before "
            "they constrain every later stage."
        )
    if settled:
        with st.container(border=True):
            st.markdown("  \n".join(_confident(i) for i in settled))


def anchor_details(b: Backend, sid: str, state: SessionState, editable: bool) -> None:
    """On demand: constraints, non-goals and identity, and (when editable) the corrections."""
    if state.anchor is None:
        return
    _intent_and_identity(state.anchor)
    if editable:
        _corrections(b, sid, state.anchor)


def _intent_and_identity(anchor: ConceptAnchor) -> None:
    with st.expander("Constraints, non-goals and identity", expanded=False):
        if anchor.intent.explicit_constraints:
            st.markdown(
                "**Explicit constraints**  \n"
                + "  \n".join(f"• {md(c)}" for c in anchor.intent.explicit_constraints)
            )
        if anchor.intent.non_goals:
            st.markdown(
                "**Non-goals**  \n" + "  \n".join(f"• {md(g)}" for g in anchor.intent.non_goals)
            )
        for feature in anchor.identity:
            st.markdown(
                f"**Identity:** {md(feature.feature)}  \n"
                f"*Why an LLM would genericize it:* {md(feature.why_distinctive)}"
            )


def _corrections(b: Backend, sid: str, anchor: ConceptAnchor) -> None:
    with st.expander("Correct the anchor (logged at this gate)", expanded=False):
        names = [i.property for i in anchor.invariants]
        prop = st.selectbox("Invariant", names, key="edit_invariant")
        value = st.text_input(
            "New value", key="edit_value", placeholder=anchor.invariant(prop).value if prop else ""
        )
        if st.button("Save value", key="save_edit"):
            if not (value or "").strip():
                st.error("Enter the new value first.", icon=":material/error:")
            else:
                _command(
                    b,
                    sid,
                    {"kind": "edit", "invariant": prop, "value": value},
                    f"Changed {name(prop)}; the edit is in this gate's history.",
                )
        if anchor.intent.non_goals:
            goal = st.selectbox("Non-goal", anchor.intent.non_goals, key="non_goal")
            if st.button("Remove non-goal", key="remove_non_goal"):
                _command(
                    b,
                    sid,
                    {"kind": "remove_non_goal", "text": goal},
                    "Removed the non-goal; the change is in this gate's history.",
                )
