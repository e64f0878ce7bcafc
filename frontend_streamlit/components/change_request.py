"""Change requests on a gate page (issue 17), once Gate 1 is approved.

The founder picks one of the phase's stages and says in words what should change. The agent's
proposal (:meth:`Haytham.propose_change`, which changes nothing) shows as a diff: the items added,
removed and changed, why, the invariants it touches as code computed them (carriers lost or
gained, items moved in or out of scope, pins contradicted), the agent's own answer beside it with
any disagreement, and a refusal when it would break one (by code's check or the agent's word).
**Accept** applies it as a revision and re-runs every later stage in the background worker
(:meth:`RunWorker.revise`), through the verifiers, to the next gate; **Discard** drops it. Below
the form: each stage's revisions (the request, when, what changed), which the Markdown and JSON
exports hold too. The proposal waits in the tab's session state until accepted or discarded.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import streamlit as st

from frontend_streamlit.components.context import Backend, attempt, flash, go, link, show_error
from frontend_streamlit.components.history import FIELD_NAMES, render_impact, when
from frontend_streamlit.components.safe_text import code, label, md
from haytham.changes.impact import impact_lines
from haytham.changes.request import Proposal
from haytham.schemas.revision import Change, Revision
from haytham.stages import ANCHOR_SOURCE, BY_SLUG, VERDICT_STAGE, Phase, phase_stages
from haytham.state import SessionState

PENDING = "change_proposal"  # st.session_state: {"sid", "proposal", "digest"}
LONG = 400  # characters of an item shown before it is cut
_FIELD = re.compile(r"([a-z][a-z0-9_]{0,40}): (.*)", re.S)
KINDS = {"added": ":green[added]", "removed": ":red[removed]", "changed": ":orange[changed]"}


def render_change_requests(
    b: Backend, sid: str, phase: Phase, state: SessionState, busy: bool
) -> None:
    """The phase's change-request form, a pending proposal as a diff, and its revisions."""
    slugs = [s.slug for s in phase_stages(phase)]
    revisions = [r for r in state.revisions if r.stage in slugs]
    gate_1 = state.gates.get(VERDICT_STAGE.phase.gate)
    open_ = gate_1 is not None and gate_1.status == "approved"
    stages = [s for s in phase_stages(phase) if s is not ANCHOR_SOURCE and s.slug in state.outputs]
    if not revisions and not (open_ and stages):
        return  # before Gate 1 is approved, rework at the gate is the way
    st.subheader("Change requests")
    pending = _pending(sid, slugs)
    if pending is not None:
        _proposal(b, sid, state, pending, busy)
    elif open_ and stages and busy:
        st.caption("A run of this session is in progress; ask for a change when it stops.")
    elif open_ and stages:
        _form(b, sid, phase, state, stages)
    _revisions(phase, revisions)


def _digest(state: SessionState, slug: str) -> str:
    out = state.outputs.get(slug)
    return hashlib.sha256(out.model_dump_json().encode()).hexdigest() if out else ""


def _pending(sid: str, slugs: list[str]) -> dict[str, Any] | None:
    held = st.session_state.get(PENDING)
    if held and held["sid"] == sid and held["proposal"].stage in slugs:
        return held
    return None


def _form(b: Backend, sid: str, phase: Phase, state: SessionState, stages: list[Any]) -> None:
    gate = phase.gate
    with st.expander("Request a change", icon=":material/edit_note:"):
        st.caption(
            "Say in words what should change in one stage's output. The agent proposes the "
            "change as a diff; nothing changes until you accept it, and then every later stage "
            "runs again and is checked again."
        )
        names = {s.slug: f"{s.number}. {s.title}" for s in stages}
        slug = st.selectbox(
            "Stage to change",
            list(names),
            format_func=lambda s: names[s],
            key=f"change_stage_{gate}",
        )
        text = st.text_area(
            "What should change?",
            key=f"change_text_{gate}",
            placeholder="e.g. Send reminders by SMS instead of email.",
        )
        if not st.button("Propose the change", key=f"change_propose_{gate}"):
            return
        if not (text or "").strip():
            st.error("Say what should change: the request is empty.", icon=":material/error:")
            return
        with st.spinner(f"Asking for a proposed change to {label(names[slug])}…"):
            proposal = attempt(lambda: b.service.propose_change(sid, slug, text))
        if proposal is not None:
            st.session_state[PENDING] = {
                "sid": sid,
                "proposal": proposal,
                "digest": _digest(state, slug),
            }
            st.rerun()


def _proposal(
    b: Backend, sid: str, state: SessionState, pending: dict[str, Any], busy: bool
) -> None:
    proposal: Proposal = pending["proposal"]
    title = BY_SLUG[proposal.stage].title
    moved = pending["digest"] != _digest(state, proposal.stage)
    with st.container(border=True, key="change_proposal"):
        st.markdown(f"**Proposed change to {md(title)}**")
        st.markdown(f"Your request: “{md(proposal.request)}”")
        st.markdown(_counts(proposal.changes))
        if proposal.changes:
            st.markdown("\n".join(_change_line(c) for c in proposal.changes))
        else:
            st.caption("No item of the stage's output changes (its text may).")
        if proposal.why:
            st.markdown(f"**Why:** {md(proposal.why)}")
        impact = proposal.impact
        st.markdown(f"**Invariants touched (code's check):** {_invariants(state, impact.touched)}")
        render_impact(impact_lines(impact), impact.broken)
        st.caption(
            f"The agent's answer: touches {_invariants(state, proposal.invariants_touched)}; "
            f"breaks {_invariants(state, proposal.breaks)}."
        )
        disagreements = impact.disagreements()
        if disagreements:
            st.warning(
                "**Code and the agent disagree**\n\n"
                + "\n".join(f"- {md(d)}" for d in disagreements),
                icon=":material/compare_arrows:",
            )
        broken = proposal.refused_for
        refused = bool(broken)
        if refused:
            st.error(
                f"This change would break {_invariants(state, broken)}, so it can't be "
                "applied: the concept anchor comes first. Change the anchor at Gate 1 (re-run "
                "from the first stage after it and edit it there), or ask for a change that "
                "keeps it.",
                icon=":material/block:",
            )
        elif moved:
            st.warning(
                f"{md(title)} changed since this proposal was made; discard it and ask again.",
                icon=":material/history:",
            )
        elif busy:
            st.caption("A run of this session is in progress; accept when it stops.")
        with st.container(horizontal=True):
            accept = st.button(
                "Accept the change",
                key="change_accept",
                type="primary",
                disabled=refused or moved or busy,
                icon=":material/check:",
                help="Applies it and re-runs every later stage, checked like any run.",
            )
            discard = st.button("Discard", key="change_discard", icon=":material/delete:")
    if discard:
        st.session_state.pop(PENDING, None)
        flash(f"Proposed change to {md(title)} discarded; nothing was changed.")
        st.rerun()
    if accept:
        try:
            b.worker.revise(sid, proposal)
        except Exception as exc:
            show_error(exc)
            return
        st.session_state.pop(PENDING, None)
        flash(f"Change request applied to {md(title)}; the later stages run again.")
        go("run", sid)


def _invariants(state: SessionState, ids: list[str]) -> str:
    if not ids:
        return "none"
    anchor = state.anchor
    out = []
    for i in ids:
        found = anchor.resolve_ref(i) if anchor is not None else None
        out.append(code(i) + (f" ({md(found.property)})" if found is not None else ""))
    return ", ".join(out)


def _counts(changes: list[Change]) -> str:
    n = {k: sum(1 for c in changes if c.kind == k) for k in KINDS}
    return f"{n['added']} added, {n['removed']} removed, {n['changed']} changed"


def _where(where: str) -> str:
    """``in_scope[SCOPE-99]`` as ``In scope · SCOPE-99``."""
    field, _, key = where.partition("[")
    name = FIELD_NAMES.get(field, field.replace("_", " ").capitalize())
    return md(name) + (f" · {code(key.rstrip(']'))}" if key else "")


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return md(text if len(text) <= LONG else text[:LONG].rstrip() + " …")


def _fields(text: str) -> dict[str, str] | None:
    """An item as the diff wrote it (``id: X; title: Y; …``) back into its fields; ``None``
    for a plain value. A part without a ``name:`` belongs to the field before it."""
    out: dict[str, str] = {}
    last = None
    for part in text.split("; "):
        found = _FIELD.match(part)
        if found:
            last = found[1]
            out[last] = found[2]
        elif last is None:
            return None
        else:
            out[last] += "; " + part
    return out or None


def _change_line(c: Change) -> str:
    head = f"- {KINDS[c.kind]} {_where(c.where)}"
    if c.kind in ("added", "removed"):
        text = c.after if c.kind == "added" else c.before
        parts = _fields(text)
        if parts is not None and "[" in c.where:  # its id is in the heading already
            text = "; ".join(f"{k}: {v}" for k, v in parts.items() if k != "id")
        return f"{head}: {_cut(text)}"
    was, now_ = _fields(c.before), _fields(c.after)
    if was is None or now_ is None:
        return f"{head}\n    - before: {_cut(c.before)}\n    - after: {_cut(c.after)}"
    lines = [
        f"    - {md(k.replace('_', ' '))}: {_cut(was.get(k, '')) or '—'} → "
        f"{_cut(now_.get(k, '')) or '—'}"
        for k in dict.fromkeys([*was, *now_])
        if was.get(k) != now_.get(k)
    ]
    return "\n".join([head, *lines])


def _revisions(phase: Phase, revisions: list[Revision]) -> None:
    """Each stage's applied change requests: the request, when, why and what changed."""
    if not revisions:
        return
    for spec in phase_stages(phase):
        mine = [r for r in revisions if r.stage == spec.slug]
        if not mine:
            continue
        n = len(mine)
        with st.expander(
            f"{spec.title}: {n} change request{'s' if n != 1 else ''} applied",
            icon=":material/history_edu:",
        ):
            for r in mine:
                st.markdown(f"**{when(r.at)}** · “{md(r.request)}” · {_counts(r.changes)}")
                if r.why:
                    st.caption(f"Why: {md(r.why)}")
                if r.impact is not None:
                    render_impact(impact_lines(r.impact), r.impact.broken)
                if r.changes:
                    st.markdown("\n".join(_change_line(c) for c in r.changes))
    st.caption("The Markdown and JSON exports include every change request.")
    link("stories", "Exports on the Stories page", ":material/download:")
