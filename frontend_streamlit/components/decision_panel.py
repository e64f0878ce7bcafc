"""One decision panel per gate: every blocking item in one list, each with its own action and a
clear state, and one action bar (Approve / Reject / Request rework) pinned to the bottom.

The items, in order: the Gate 1 ambiguities (clarify with options), then what
``Haytham.blocking`` lists for the gate — a NO-GO verdict, blocking verifier violations, an
inconclusive verification, failed stage checks, blocking validator findings. Each open item can
be overridden with a required reason or, when it names a stage, sent back for rework with
feedback. Overrides of the gate's current round show as "overridden by you" with their reason;
ambiguities clarified at this gate show as resolved. **Approve** is enabled exactly when no item
is open. Labels are plain text: an item's id is never shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import streamlit as st

from frontend_streamlit.components.anchor_review import grounding
from frontend_streamlit.components.context import Backend, flash, go, show_error
from frontend_streamlit.components.safe_text import label, md, name, no_paths
from haytham.pipeline.gates import AMBIGUITY, gate_items, phase_for_gate
from haytham.schemas.anchor import Invariant
from haytham.stages import Phase, get_stage, phase_stages
from haytham.state import SessionState, is_gate

State = Literal["open", "resolved", "overridden"]
STATE_BADGE = {
    "open": ("open", "red", ":material/error:"),
    "resolved": ("resolved", "green", ":material/check_circle:"),
    "overridden": ("overridden by you", "blue", ":material/verified_user:"),
}
KIND_ICON = {
    "ambiguity": ":material/help:",
    "verdict": ":material/gavel:",
    "violation": ":material/block:",
    "inconclusive": ":material/question_mark:",
    "check": ":material/rule:",
    "finding": ":material/report:",
    "other": ":material/priority_high:",
}


@dataclass(frozen=True)
class Item:
    """One row of the panel."""

    key: str  # widget- and CSS-safe, stable across reruns
    id: str  # the blocking item's id (what an override targets); "" for an ambiguity
    kind: str
    title: str  # plain text
    detail: str  # plain text, shown in full
    stage: str | None
    state: State
    note: str = ""  # the override's reason, or the clarified value
    auto: bool = False  # overridden or clarified automatically, not by the reviewer
    invariant: Invariant | None = None


def _key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def _title(slug: str | None) -> str:
    if not slug:
        return ""
    try:
        return get_stage(slug).title
    except Exception:  # an unknown slug from an older session: show it as it is
        return slug


def _human(word: str) -> str:
    """``invariant_coverage`` -> ``Invariant coverage``."""
    text = word.replace("_", " ").replace("-", " ").strip()
    return text[:1].upper() + text[1:]


def describe(item_id: str, stage: str | None, message: str) -> tuple[str, str, str]:
    """(kind, title, detail) of a blocking item, in plain words."""
    parts = item_id.split(":")
    where = _title(stage)
    if parts[0] == "verdict":
        verdict = parts[1] if len(parts) > 1 else "?"
        detail = re.sub(rf"^Verdict {re.escape(verdict)} \((.*)\)$", r"\1", message, flags=re.S)
        return "verdict", f"The validation says {verdict}", detail or message
    if parts[0] == "violation" and len(parts) >= 3:
        invariant = parts[1]
        detail = message.removeprefix(f"{invariant}: ")
        return "violation", f"{invariant} is not honored in {where}", detail
    if item_id == "verification:inconclusive":
        detail = message.removeprefix("Verification inconclusive: ")
        return "inconclusive", "The verifier could not decide", detail
    if parts[0] == "check":
        return "check", f"{where} failed a check (needs attention)", message
    if parts[0] == "finding" and len(parts) >= 2:
        return "finding", f"{_human(parts[1])} finding in {where}", message
    return "other", where or "Blocking item", message


def items(b: Backend, state: SessionState, gate: int) -> list[Item]:
    """Every blocking item of ``gate`` (open, resolved or overridden), in panel order: what
    :func:`~haytham.pipeline.gates.gate_items` computes, the history's count included."""
    out: list[Item] = []
    anchored = {i.property: i for i in (state.anchor.invariants if state.anchor else [])}
    for item in gate_items(state, phase_for_gate(gate)):
        if item.kind == AMBIGUITY:
            prop = item.id.split(":", 1)[1]
            out.append(
                Item(
                    key=_key(f"ambiguity-{prop}"),
                    id="",
                    kind="ambiguity",
                    title=f"What did you mean by {prop}?",
                    detail=item.messages[0] if item.messages else "",
                    stage=None,
                    state=item.state,
                    note=item.note,
                    auto=item.auto,
                    invariant=anchored.get(prop) if item.state == "open" else None,
                )
            )
            continue
        kind, title, _ = describe(item.id, item.stage, "")
        details = [describe(item.id, item.stage, no_paths(m))[2] for m in item.messages]
        key = _key(item.id)
        while any(i.key == key for i in out):  # two ids that differ only in punctuation
            key += "-"
        out.append(
            Item(
                key=key,
                id=item.id,
                kind=kind,
                title=title,
                detail="\n".join(details),
                stage=item.stage,
                state=item.state,
                note=item.note,
                auto=item.auto,
            )
        )
    return out


def open_count(found: list[Item]) -> int:
    """How many of the panel's items still need a decision (Approve waits while any does)."""
    return sum(1 for i in found if i.state == "open")


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1 (``2 items``, ``1 item``)."""
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- the panel ---------------------------------------------------------------------------------
def render_panel(
    b: Backend, sid: str, gate: int, state: SessionState, editable: bool, stale: bool = False
) -> list[Item]:
    """The gate's decision panel; returns its items (the action bar needs the open count).
    With ``stale`` checks nothing is shown as passed: what they found is from before."""
    found = items(b, state, gate)
    st.subheader("Needs your decision")
    n_open = open_count(found)
    done = [
        f"{n} {what}"
        for s, what in (("overridden", "overridden"), ("resolved", "resolved"))
        if (n := sum(1 for i in found if i.state == s))
    ]
    if not found and stale:
        st.info(
            "The last checks found nothing blocking, but they are stale: re-check them first.",
            icon=":material/history:",
        )
        return found
    if not found:
        st.success("Nothing blocks this gate.", icon=":material/check_circle:")
        return found
    tail = f" · {', '.join(done)}" if done else ""
    if n_open:
        st.markdown(f"**{plural(n_open, 'blocking item')}** to resolve{tail}")
    elif stale:
        st.info(f"Nothing open in the last checks{tail}, but they are stale: re-check them first.")
    else:
        st.success(
            f"Every blocking item is resolved or overridden{tail}.", icon=":material/check_circle:"
        )
    ambiguities = [i for i in found if i.kind == "ambiguity" and i.state == "open"]
    if ambiguities:
        st.warning(
            f"**Clarification needed** — {len(ambiguities)} invariant(s) are ambiguous. "
            "Pick what you meant, then confirm; Gate 1 cannot be approved until every "
            "ambiguity is resolved.",
            icon=":material/priority_high:",
        )
    choices: dict[str, str | None] = {}
    for item in found:
        if item.kind == "ambiguity" and item.state == "open" and item.invariant is not None:
            choices[item.invariant.property] = _ambiguity(item, sid, editable)
    if ambiguities and editable:
        _confirm(b, sid, choices)
    for item in found:
        if item.kind == "ambiguity" and item.state == "open":
            continue
        _item(b, sid, gate, item, editable)
    return found


def _head(item: Item) -> None:
    text, color, icon = STATE_BADGE[item.state]
    if item.state == "overridden" and item.auto:
        text = "overridden automatically"
    elif item.state == "resolved" and item.kind == "ambiguity":
        text = "resolved automatically" if item.auto else "clarified by you"
        if item.note.startswith("left open"):
            text, color, icon = "left open", "gray", ":material/radio_button_unchecked:"
    head = st.container(horizontal=True, vertical_alignment="center")
    head.markdown(f"**{md(item.title)}**")
    head.badge(text, color=color, icon=icon)  # type: ignore[arg-type]


def _ambiguity(item: Item, sid: str, editable: bool) -> str | None:
    inv = item.invariant
    assert inv is not None
    with st.container(border=True, key=f"item_{item.key}"):
        head = st.container(horizontal=True, vertical_alignment="center")
        head.markdown(f":orange[**{name(inv.property)}**] — extracted as *{md(inv.value)}*")
        head.badge(
            f"{round(inv.confidence * 100)}% confident", color="orange", icon=":material/help:"
        )
        head.badge("open", color="red", icon=":material/error:")
        st.markdown(
            f"{md(inv.ambiguity or '')}  \nSource: “{md(inv.source)}”{grounding(inv)}",
        )
        return st.radio(
            f"What did you mean by {name(inv.property)}?",
            inv.choices(),  # the options, then "leave it open"
            format_func=md,  # options are model text: shown literally, never as Markdown
            index=None,
            key=f"clarify_{sid}_{inv.property}",
            disabled=not editable,
        )


def _confirm(b: Backend, sid: str, choices: dict[str, str | None]) -> None:
    if not st.button(
        "Confirm clarifications",
        type="primary",
        key="confirm_clarifications",
        icon=":material/done_all:",
    ):
        return
    picked = {p: c for p, c in choices.items() if c is not None}
    if not picked:
        names = ", ".join(name(p) for p in choices)
        st.error(f"Pick an option for: {names}.", icon=":material/error:")
        return
    _apply(
        b,
        sid,
        1,
        {"kind": "clarify_all", "choices": picked},
        f"Clarified {len(picked)} invariant(s); the anchor was updated.",
    )


def _item(b: Backend, sid: str, gate: int, item: Item, editable: bool) -> None:
    where = f" · {md(_title(item.stage))}" if item.stage and item.kind != "violation" else ""
    with st.container(border=True, key=f"item_{item.key}"):
        _head(item)
        icon = KIND_ICON.get(item.kind, KIND_ICON["other"])
        if item.state == "open":
            st.markdown(f"{icon} {md(item.detail)}{where}")
        elif item.detail or where:
            st.caption(f"{md(item.detail)}{where}")
        if item.state == "resolved":
            st.markdown(f"Your answer: {md(item.note)}")
        elif item.state == "overridden":
            who = "Overridden automatically" if item.auto else "Your reason"
            st.markdown(f"{who}: “{md(item.note)}”")
        elif editable:
            _item_actions(b, sid, gate, item)


def _item_actions(b: Backend, sid: str, gate: int, item: Item) -> None:
    stage = _title(item.stage) if item.stage else ""
    prompt = (
        "Why it does not apply (to override), or what must change (to rework)"
        if stage
        else "Why it does not apply (required to override)"
    )
    text = st.text_input(prompt, key=f"why_{item.key}")
    row = st.container(horizontal=True)
    verdict = item.kind == "verdict"
    override = row.button(
        "Proceed anyway" if verdict else "Override",
        key="proceed_anyway" if verdict else f"override_{item.key}",
        icon=":material/verified_user:",
    )
    rework = bool(stage) and row.button(
        f"Rework {stage}", key=f"rework_{item.key}", icon=":material/replay:"
    )
    if not stage:
        st.caption("Or send a stage back for rework from the bar below: the checks run again.")
    reason = (text or "").strip()
    if override:
        if not reason:
            st.error(
                "Proceeding past NO-GO needs a reason."
                if verdict
                else "An override needs a reason: say why it does not apply.",
                icon=":material/error:",
            )
            return
        _apply(
            b,
            sid,
            gate,
            {"kind": "override", "target": item.id, "reason": reason},
            f"Overridden: {md(item.title)}. Your reason is logged at this gate.",
        )
    if rework:
        send_back(b, sid, gate, item.stage, reason, md(stage))


def _apply(b: Backend, sid: str, gate: int, command: dict[str, Any], done: str) -> None:
    """A command that keeps the session at this gate (clarify, override): show the result."""
    try:
        b.service.decide(sid, gate, command, continue_run=False)
    except Exception as exc:
        show_error(exc)
    else:
        flash(done)
        st.rerun()


def decide(b: Backend, sid: str, gate: int, command: dict[str, Any], done: str) -> None:
    """Apply ``command``; if the session moves on, continue the run in the background."""
    try:
        outcome = b.service.decide(sid, gate, command, continue_run=False)
    except Exception as exc:
        show_error(exc)
        return
    flash(done)
    if outcome.next_action and not is_gate(outcome.next_action):
        try:
            b.worker.run(sid, f"{command['kind']} at gate {gate}")
        except Exception as exc:
            show_error(exc)
            return
        go("run", sid)
    st.rerun()


# -- the action bar ----------------------------------------------------------------------------
def action_bar(
    b: Backend, sid: str, gate: int, phase: Phase, n_open: int, stale: bool = False
) -> None:
    """Approve / Reject / Request rework, pinned to the bottom of the page (``st.bottom``), the
    same on every gate. Approve is enabled exactly when nothing in the panel is open and the
    gate's checks are not stale; with stale checks, "Approve anyway" takes a reason (logged)."""
    with (
        st.bottom,
        st.container(
            horizontal=True,
            vertical_alignment="center",
            key="gate_actions",
            gap="medium",
            wrap=False,
        ),
    ):
        if n_open:
            st.markdown(
                f":red[**{plural(n_open, 'blocking item')} open**] — resolve "
                f"{'it' if n_open == 1 else 'each one'} in the panel to approve."
            )
        elif stale:
            st.markdown(
                ":orange[**The checks are stale**] — re-check them above, or approve anyway "
                "with a reason."
            )
        else:
            st.markdown(f":green[**Nothing is open**] — Gate {gate} can be approved.")
        if st.button(
            f"Approve Gate {gate}",
            type="primary",
            key=f"approve_{gate}",
            disabled=n_open > 0 or stale,
            icon=":material/check:",
        ):
            decide(b, sid, gate, {"kind": "approve", "note": ""}, f"Gate {gate} approved.")
        if stale and not n_open:
            with st.popover(
                "Approve anyway", icon=":material/warning:", key=f"approve_stale_menu_{gate}"
            ):
                why = st.text_input(
                    "Why approve without re-checking? (logged at this gate)",
                    key=f"approve_stale_reason_{gate}",
                )
                if st.button("Approve with stale checks", key=f"approve_stale_{gate}"):
                    if not (why or "").strip():
                        st.error("Say why: the override is logged.", icon=":material/error:")
                    else:
                        decide(
                            b,
                            sid,
                            gate,
                            {"kind": "approve", "note": "", "override_stale": why},
                            f"Gate {gate} approved with stale checks (logged).",
                        )
        with st.popover("Request rework", icon=":material/replay:", key=f"rework_menu_{gate}"):
            _rework_form(b, sid, gate, phase)
        with st.popover("Reject", icon=":material/cancel:", key=f"reject_menu_{gate}"):
            why = st.text_input("Why reject? (optional)", key=f"reject_note_{gate}")
            sure = st.checkbox("Yes, stop this session here", key=f"reject_sure_{gate}")
            if st.button(f"Reject at Gate {gate}", key=f"reject_{gate}", disabled=not sure):
                decide(b, sid, gate, {"kind": "reject", "note": why}, f"Rejected at Gate {gate}.")


def _rework_form(b: Backend, sid: str, gate: int, phase: Phase) -> None:
    specs = {s.slug: f"{s.number}. {s.title}" for s in phase_stages(phase)}
    stage = st.selectbox(
        "Stage to redo", list(specs), format_func=lambda s: specs[s], key=f"rework_stage_{gate}"
    )
    feedback = st.text_area("Feedback: what must change", key=f"rework_feedback_{gate}")
    if st.button("Send back for rework", key=f"rework_{gate}"):
        send_back(b, sid, gate, stage, feedback, label(specs[stage]))


def send_back(
    b: Backend, sid: str, gate: int, stage: str | None, feedback: str, shown: str
) -> None:
    """Request rework of ``stage`` with the reviewer's feedback (refused, with why, if empty)."""
    if not (feedback or "").strip():
        st.error("Rework needs feedback: say what the stage must change.", icon=":material/error:")
        return
    decide(
        b,
        sid,
        gate,
        {"kind": "rework", "stage": stage, "feedback": feedback},
        f"Sent {shown} back for rework.",
    )
