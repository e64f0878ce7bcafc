"""A decision gate page: the phase's outputs, what the checks found, and the reviewer's actions.

Every decision is one gate command through :meth:`Haytham.decide` (so it lands in
``gates.json``); approve and rework then continue the run in the background worker.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from components.anchor_review import change_log, render_anchor
from components.context import (
    Backend,
    attempt,
    backend,
    flash,
    go,
    link,
    require_session,
    show_error,
    show_flash,
)
from components.findings import validator_findings, verification
from components.history import render_history
from components.progress import pretty_status
from components.safe_text import code, md, safe_markdown

from haytham.pipeline.state import SessionState
from haytham.schemas.gate import GateRecord
from haytham.stages import Phase, get_stage, phase_stages

ALL_OPEN = "all open items"


def render_gate(gate: int) -> None:
    b = backend()
    sid = require_session(b)
    phase = list(Phase)[gate - 1]
    st.title(f"Gate {gate} · {phase.value}")
    show_flash()
    state = attempt(lambda: b.service.load_state(sid))
    status = attempt(lambda: b.service.status(sid))
    if state is None or status is None:
        return
    record = state.gates.get(gate)
    here = status.get("gate") == gate
    busy = b.worker.is_running(sid)
    st.caption(
        f"Session {code(sid)} · this gate: {md(record.status if record else 'not reached')} · "
        f"session: {md(pretty_status(status['status']))}"
    )
    if busy:
        st.info(
            "A run of this session is in progress; decisions wait until it stops.",
            icon=":material/hourglass_top:",
        )
        link("run", "Watch the run", ":material/play_circle:")
    elif not here:
        st.info(_not_here(gate, record, status), icon=":material/info:")
    editable = here and not busy
    _stale(b, sid, status, busy)
    render_history(b, sid, gate)
    with st.expander("The idea, as you wrote it"):
        st.markdown(md(state.idea))
    if phase is Phase.WHY:
        render_anchor(b, sid, state, editable)
        verdict = status.get("verdict")
        if verdict:
            st.markdown(f"**Verdict:** {md(verdict)} — details on the Verdict page.")
            link("verdict", "Open the verdict", ":material/gavel:")
    _outputs(b, sid, phase, state)
    verification(phase, state)
    validator_findings(phase, state)
    change_log(record)
    _overrides(record)
    if editable:
        _actions(b, sid, gate, phase, state, status)


def _stale(b: Backend, sid: str, status: dict[str, Any], busy: bool) -> None:
    """Stages made with an anchor value the reviewer has since changed, and the way to redo them."""
    stale = status.get("stale") or []
    if not stale:
        return
    names = ", ".join(get_stage(s).title for s in stale)
    st.warning(
        f"Made with an earlier anchor: {md(names)}. Their outputs and checks may not follow "
        "the anchor as it is now.",
        icon=":material/history:",
    )
    first = get_stage(stale[0])
    clicked = st.button(
        f"Re-run from {first.title}", key="rerun_stale", disabled=busy, icon=":material/replay:"
    )
    if clicked and attempt(lambda: b.service.clear_from(sid, first.slug)) is not None:
        b.worker.run(sid, "resume")
        go("run", sid)


def _not_here(gate: int, record: GateRecord | None, status: dict[str, Any]) -> str:
    if record is None:
        return f"The session has not reached Gate {gate} yet."
    where = md(pretty_status(status["status"]))
    note = f" (note: {md(record.note)})" if record.note else ""
    return f"Gate {gate} is {md(record.status)}{note}; the session is {where}."


def _outputs(b: Backend, sid: str, phase: Phase, state: SessionState) -> None:
    st.subheader("Stage outputs")
    shown = False
    for spec in phase_stages(phase):
        out = state.outputs.get(spec.slug)
        if out is None:
            continue
        shown = True
        box = st.expander(
            f"{spec.number}. {spec.title}", key=f"output_{spec.slug}", on_change="rerun"
        )
        if box.open:  # rendered only when opened: keeps the gate page light
            box.markdown(safe_markdown(b.service.show(sid, spec.slug)))
    if not shown:
        st.caption("No stage of this phase has run yet.")


def _overrides(record: GateRecord | None) -> None:
    rows = [
        f"**{md(o.target)}** — {md(o.reason)}" + (" (auto)" if o.auto else "")
        for o in (record.overrides if record else [])
    ]
    if rows:
        st.markdown("**Overrides**  \n" + "  \n".join(f"• {r}" for r in rows))


def _decide(b: Backend, sid: str, gate: int, command: dict[str, Any], done: str) -> None:
    """Apply ``command``; if the session moves on, continue the run in the background."""
    try:
        outcome = b.service.decide(sid, gate, command, continue_run=False)
    except Exception as exc:
        show_error(exc)
        return
    flash(done)
    if outcome.next_action and not outcome.next_action.startswith("gate_"):
        attempt(lambda: b.worker.run(sid, f"{command['kind']} at gate {gate}"))
        go("run", sid)
    st.rerun()


def _actions(
    b: Backend, sid: str, gate: int, phase: Phase, state: SessionState, status: dict[str, Any]
) -> None:
    st.subheader("Decision")
    blocking = b.service.blocking(state, gate)
    ambiguous = status.get("open_ambiguities") if gate == 1 else []
    reasons = []
    if ambiguous:
        reasons.append(f"{len(ambiguous)} ambiguous invariant(s) need clarification")
    if blocking:
        reasons.append(f"{len(blocking)} blocking item(s) are open")
    if reasons:
        st.warning("Approve is disabled: " + "; ".join(reasons) + ".", icon=":material/lock:")
    approve, reject, rework, override = st.tabs(["Approve", "Reject", "Request rework", "Override"])
    with approve:
        note = st.text_input("Note (optional)", key=f"approve_note_{gate}")
        if st.button(
            f"Approve Gate {gate}", type="primary", key=f"approve_{gate}", disabled=bool(reasons)
        ):
            _decide(b, sid, gate, {"kind": "approve", "note": note}, f"Gate {gate} approved.")
    with reject:
        why = st.text_input("Why reject? (optional)", key=f"reject_note_{gate}")
        sure = st.checkbox("Yes, stop this session here", key=f"reject_sure_{gate}")
        if st.button(f"Reject at Gate {gate}", key=f"reject_{gate}", disabled=not sure):
            _decide(b, sid, gate, {"kind": "reject", "note": why}, f"Rejected at Gate {gate}.")
    with rework:
        _rework_form(b, sid, gate, phase)
    with override:
        _override_form(b, sid, gate, blocking)


def _rework_form(b: Backend, sid: str, gate: int, phase: Phase) -> None:
    specs = {s.slug: f"{s.number}. {s.title}" for s in phase_stages(phase)}
    stage = st.selectbox(
        "Stage to redo", list(specs), format_func=specs.get, key=f"rework_stage_{gate}"
    )
    feedback = st.text_area("Feedback: what must change", key=f"rework_feedback_{gate}")
    if st.button("Request rework", key=f"rework_{gate}"):
        if not (feedback or "").strip():
            st.error(
                "Rework needs feedback: say what the stage must change.", icon=":material/error:"
            )
            return
        _decide(
            b,
            sid,
            gate,
            {"kind": "rework", "stage": stage, "feedback": feedback},
            f"Sent {stage} back for rework.",
        )


def _override_form(b: Backend, sid: str, gate: int, blocking: list[Any]) -> None:
    if not blocking:
        st.caption("Nothing blocking is open at this gate.")
        return
    for item in blocking:
        st.markdown(f"• {code(item.id)} — {md(item.message)}")
    target = st.selectbox(
        "Override", [ALL_OPEN, *[i.id for i in blocking]], key=f"override_target_{gate}"
    )
    reason = st.text_area(
        "Reason (required): why the finding does not apply", key=f"override_reason_{gate}"
    )
    if st.button("Override", key=f"override_{gate}"):
        if not (reason or "").strip():
            st.error("An override needs a reason.", icon=":material/error:")
            return
        command = {
            "kind": "override",
            "reason": reason,
            "target": None if target == ALL_OPEN else target,
        }
        _decide(b, sid, gate, command, "Override recorded; it is logged in gates.json.")
