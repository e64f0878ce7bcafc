"""Gate 1 anchor review (ADR-022 1c): review mode, or clarification mode when ambiguous.

High-confidence invariants show in green with their source quotes. Ambiguous ones (confidence
< 0.7) show in amber with a confidence badge, the ambiguity and their options as radio buttons;
one "Confirm clarifications" button sends every choice as one ``clarify_all`` command. The
reviewer can also correct an invariant's value or remove a non-goal; each change is logged in
the gate record.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from components.context import Backend, flash, show_error
from components.safe_text import md, name

from haytham.pipeline.state import SessionState
from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.schemas.gate import GateRecord
from haytham.stages import ANCHOR_SOURCE


def _command(b: Backend, sid: str, command: dict[str, Any], done: str) -> None:
    try:
        b.service.decide(sid, 1, command, continue_run=False)
    except Exception as exc:
        show_error(exc)
    else:
        flash(done)
        st.rerun()


def _confident(inv: Invariant) -> None:
    tag = (
        " · clarified by you"
        if inv.user_clarified
        else (" · auto-resolved (first option)" if inv.auto_resolved else "")
    )
    text = (
        f"**{md(inv.property)}** = {md(inv.value)}  \n"
        f"Source: “{md(inv.source)}”{_grounding(inv)} · {round(inv.confidence * 100)}% "
        f"confident{tag}"
    )
    if inv.grounded is False:  # confirmed by the founder, but its quote is not in the idea
        st.info(text, icon=":material/person_check:")
    else:
        st.success(text, icon=":material/check_circle:")


def _grounding(inv: Invariant) -> str:
    """How the source quote was checked against the idea (nothing for older sessions)."""
    if inv.grounded is None:
        return ""
    return " (found in your idea)" if inv.grounded else " (**not found in your idea**)"


def _ambiguous(inv: Invariant, key: str, editable: bool) -> str | None:
    with st.container(border=True):
        head, badge = st.columns([4, 1])
        head.markdown(f"**{md(inv.property)}** — extracted as *{md(inv.value)}*")
        with badge:
            st.badge(
                f"{round(inv.confidence * 100)}% confident", color="orange", icon=":material/help:"
            )
        st.warning(
            f"{md(inv.ambiguity or '')}  \nSource: “{md(inv.source)}”{_grounding(inv)}",
            icon=":material/warning:",
        )
        return st.radio(
            f"What did you mean by {name(inv.property)}?",
            inv.clarification_options,
            format_func=md,  # options are model text: shown literally, never as Markdown
            index=None,
            key=key,
            disabled=not editable,
        )


def render_anchor(b: Backend, sid: str, state: SessionState, editable: bool) -> None:
    """The anchor at Gate 1; ``editable`` when the session is waiting here."""
    anchor = state.anchor
    if anchor is None:
        st.info(
            f"No concept anchor yet: it is extracted right after {ANCHOR_SOURCE.title.lower()}."
        )
        return
    pending = anchor.open_ambiguities()
    st.subheader("Concept anchor")
    if pending:
        st.warning(
            f"**Clarification needed** — {len(pending)} invariant(s) are ambiguous. "
            "Pick what you meant for each, then confirm; Gate 1 cannot be approved "
            "until every ambiguity is resolved.",
            icon=":material/priority_high:",
        )
    else:
        st.success(
            "No invariant is waiting for a clarification. Check them against your idea before "
            "they constrain every later stage.",
            icon=":material/verified:",
        )
    st.markdown(f"**Goal:** {md(anchor.intent.goal)}")
    for inv in anchor.invariants:
        if not inv.is_ambiguous:
            _confident(inv)
    choices: dict[str, str | None] = {}
    for inv in pending:
        choices[inv.property] = _ambiguous(inv, f"clarify_{sid}_{inv.property}", editable)
    if (
        pending
        and editable
        and st.button("Confirm clarifications", type="primary", key="confirm_clarifications")
    ):
        missing = [p for p, c in choices.items() if c is None]
        if missing:
            names = ", ".join(name(p) for p in missing)
            st.error(f"Pick an option for: {names}.", icon=":material/error:")
        else:
            _command(
                b,
                sid,
                {"kind": "clarify_all", "choices": choices},
                f"Clarified {len(choices)} invariant(s); the anchor was updated.",
            )
    _intent_and_identity(anchor)
    if editable:
        _corrections(b, sid, anchor)


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
                    f"Changed {name(prop)}; the edit is logged in gates.json.",
                )
        if anchor.intent.non_goals:
            goal = st.selectbox("Non-goal", anchor.intent.non_goals, key="non_goal")
            if st.button("Remove non-goal", key="remove_non_goal"):
                _command(
                    b,
                    sid,
                    {"kind": "remove_non_goal", "text": goal},
                    "Removed the non-goal; the change is logged in gates.json.",
                )


def change_log(record: GateRecord | None) -> None:
    """Clarifications and edits recorded at a gate (none before it first opens)."""
    if record is None:
        return
    rows = [
        f"clarified **{md(c.invariant)}** → {md(c.choice)}" + (" (auto)" if c.auto else "")
        for c in record.clarifications
    ]
    rows += [
        f"{'edited' if e.kind == 'edit_value' else 'removed non-goal'} "
        f"**{md(e.target)}**: {md(e.before)}" + (f" → {md(e.after)}" if e.after else "")
        for e in record.edits
    ]
    if rows:
        st.markdown("**Changes logged at this gate**  \n" + "  \n".join(f"• {r}" for r in rows))
