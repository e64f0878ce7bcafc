"""A decision gate page, one screen: what this phase decided, what needs a decision, details on
demand.

1. **What this phase decided**: a few key fields from the phase's payloads, the stages' state
   and the checks in one line (Gate 1 also shows the concept anchor).
2. **Needs your decision**: the decision panel (``components.decision_panel``) — every blocking
   item with its own action and state — and the action bar pinned to the bottom of the page.
3. **Details**: the idea, each stage's output (once: its summary and Markdown, rendered only
   when opened), the verifier's and the validators' findings in full.

Every decision is one gate command through :meth:`Haytham.decide` (so it lands in
``gates.json``); approve and rework then continue the run in the background worker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import streamlit as st

from frontend_streamlit.components.anchor_review import anchor_details, render_anchor
from frontend_streamlit.components.change_request import render_change_requests
from frontend_streamlit.components.context import (
    Backend,
    attempt,
    backend,
    flash,
    go,
    link,
    require_session,
    show_flash,
)
from frontend_streamlit.components.decision_panel import action_bar, open_count, render_panel
from frontend_streamlit.components.findings import checks_line, validator_findings, verification
from frontend_streamlit.components.history import render_history
from frontend_streamlit.components.idea_text import show_idea
from frontend_streamlit.components.progress import pretty_status
from frontend_streamlit.components.safe_text import code, md, safe_markdown
from frontend_streamlit.components.stale_banner import stale_banner
from haytham.pipeline.staleness import describe, stale_checks
from haytham.schemas.gate import GateRecord
from haytham.stages import (
    STORY_STAGE,
    VERDICT_STAGE,
    Phase,
    architecture_decisions,
    build_buy_analysis,
    capability_model,
    get_stage,
    idea_analysis,
    market_context,
    mvp_scope,
    phase_stages,
    risk_assessment,
    system_traits,
)
from haytham.state import SessionState, payload_of

GATE_STATUS = {
    "pending": "not reached yet",
    "open": "waiting for your decision",
    "approved": "approved",
    "rejected": "rejected",
    "rework_requested": "sent back for rework",
}
STAGE_STATUS = {"completed": "done", "needs_attention": "needs attention"}


def render_gate(gate: int) -> None:
    """The whole page of gate ``gate`` (1-4): its summary, the decision panel, history,
    details, change requests and, where the run waits here, the action bar."""
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
        f"Session {code(sid)} · this gate: {_gate_status(record)} · "
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
    stale = _stale(b, sid, gate, phase, state, busy)
    _summary(phase, state)
    if phase is Phase.WHY:
        render_anchor(b, sid, state, editable)
    found = render_panel(b, sid, gate, state, editable, stale=stale)
    render_history(b, sid, gate)  # below the decisions still to make
    _details(b, sid, phase, state, editable)
    render_change_requests(b, sid, phase, state, busy)  # after Gate 1: revise a stage's output
    if editable:
        action_bar(b, sid, gate, phase, open_count(found), stale=stale)


def _gate_status(record: GateRecord | None) -> str:
    if record is None:
        return GATE_STATUS["pending"]
    text = GATE_STATUS.get(record.status, md(record.status))
    return f"{text} (round {record.round})" if record.round > 1 else text


def _stale(b: Backend, sid: str, gate: int, phase: Phase, state: SessionState, busy: bool) -> bool:
    """This gate's checks made before the anchor or an output they checked changed, and the
    two ways to renew them: re-check (verifier and validators only) or re-run the stages.
    Returns whether any is stale (approval then waits, or takes an explicit override)."""
    stale = stale_checks(state, phase)
    if not stale:
        if stale_checks(state):  # another phase's checks: the session-wide banner says so
            stale_banner(b, sid, state=state)
        return False
    st.warning(
        f"**This gate's checks are stale:** {md(describe(stale))}. What they say (passed, "
        "honored, findings) may not hold any more, so approval waits until they are "
        "re-checked — the verifier and validators run again on the same outputs — or the "
        "stages re-run.",
        icon=":material/history:",
    )
    row = st.container(horizontal=True)
    recheck = row.button(
        "Re-check",
        key="recheck_stale",
        type="primary",
        disabled=busy,
        icon=":material/fact_check:",
        help="Runs this phase's verifier and validators again against the current anchor.",
    )
    slug = next((c.stage for c in stale if c.stage), phase_stages(phase)[0].slug)
    first = get_stage(slug)
    rerun = row.button(
        f"Re-run from {first.title}", key="rerun_stale", disabled=busy, icon=":material/replay:"
    )
    if recheck:
        with st.spinner("Re-checking the phase against the current anchor…"):
            done = attempt(lambda: b.service.recheck(sid, gate))
        if done is not None:
            flash(f"Re-checked Gate {gate}'s phase against the current anchor.")
            st.rerun()
    if rerun and attempt(lambda: b.service.clear_from(sid, first.slug)) is not None:
        b.worker.run(sid, "resume")
        go("run", sid)
    return True


def _not_here(gate: int, record: GateRecord | None, status: dict[str, Any]) -> str:
    if record is None:
        return f"The session has not reached Gate {gate} yet."
    where = md(pretty_status(status["status"]))
    note = f" (note: {md(record.note)})" if record.note else ""
    return f"Gate {gate} is {_gate_status(record)}{note}; the session is {where}."


# -- 1. what this phase decided ----------------------------------------------------------------
def _few(values: Iterable[Any], n: int = 5) -> str:
    """Up to ``n`` values, escaped, then how many more."""
    items = [str(v).strip().rstrip(".") for v in values if v not in (None, "")]
    shown = "; ".join(md(v) for v in items[:n])
    return shown + (f" … and {len(items) - n} more" if len(items) > n else "")


def _word(value: Any) -> str:
    """A payload's code value in words (``invite_only`` -> ``invite only``, ``True`` -> yes)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, list):
        return ", ".join(_word(v) for v in value) or "none"
    return md(str(value).replace("_", " "))


def _why(state: SessionState) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    verdict = payload_of(state.outputs, VERDICT_STAGE.slug)
    if verdict is not None and verdict.verdict:
        risk = f" · risk {md(verdict.risk_level)}" if verdict.risk_level else ""
        rows.append(
            ("Verdict", f"**{md(verdict.verdict)}** — {md(verdict.verdict_reason or '')}{risk}")
        )
    idea = payload_of(state.outputs, idea_analysis.SPEC.slug)
    if idea is not None:
        rows.append(("Value proposition", md(idea.value_proposition)))
        rows.append(("Target segments", _few(s.name for s in idea.target_segments)))
    risks = payload_of(state.outputs, risk_assessment.SPEC.slug)
    if risks is not None:
        high = [r.risk for r in risks.risks if r.impact == "high"]
        rows.append(("High-impact risks", _few(high, 3) or "none"))
    market = payload_of(state.outputs, market_context.SPEC.slug)
    if market is not None:
        rows.append(("Market", md(market.market_size)))
    return rows


def _what(state: SessionState) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    scope = payload_of(state.outputs, mvp_scope.SPEC.slug)
    if scope is not None:
        rows.append(("The one thing", md(scope.the_one_thing)))
        rows.append(("Primary segment", md(scope.primary_segment)))
        rows.append(("Appetite", _word(scope.appetite)))
        rows.append(
            (f"In scope ({len(scope.in_scope)})", _few((i.title for i in scope.in_scope), 6))
        )
        if scope.out_of_scope:
            rows.append(
                (
                    f"Out of scope ({len(scope.out_of_scope)})",
                    _few((i.title for i in scope.out_of_scope), 4),
                )
            )
    caps = payload_of(state.outputs, capability_model.SPEC.slug)
    if caps is not None:
        rows.append(
            (
                "Capabilities",
                f"{len(caps.functional)} functional, {len(caps.non_functional)} non-functional: "
                + _few((c.name for c in caps.functional), 4),
            )
        )
    return rows


def _how(state: SessionState) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    traits = payload_of(state.outputs, system_traits.SPEC.slug)
    if traits is not None:
        dumped = traits.model_dump()
        rows.append(
            (
                "System traits",
                " · ".join(
                    f"{_word(k)} **{_word(v.get('value'))}**"
                    for k, v in dumped.items()
                    if isinstance(v, dict) and "value" in v  # not the derived constraints
                ),
            )
        )
    buy = payload_of(state.outputs, build_buy_analysis.SPEC.slug)
    if buy is not None:
        counts = Counter(i.recommendation for i in buy.items)
        bought = [i.service for i in buy.items if i.recommendation != "BUILD" and i.service]
        rows.append(
            (
                "Build or buy",
                " · ".join(f"{md(k.lower())} {v}" for k, v in sorted(counts.items()))
                + (f" — services: {_few(bought, 4)}" if bought else ""),
            )
        )
    decisions = payload_of(state.outputs, architecture_decisions.SPEC.slug)
    if decisions is not None:
        rows.append(
            (
                f"Decisions ({len(decisions.decisions)})",
                _few((d.title for d in decisions.decisions), 5),
            )
        )
        coverage = decisions.coverage
        if coverage is not None:
            rows.append(("Capabilities without a decision", _few(coverage.uncovered) or "none"))
    return rows


def _stories(state: SessionState) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    stories = payload_of(state.outputs, STORY_STAGE.slug)
    if stories is not None:
        appetite = f" (appetite {_word(stories.appetite)})" if stories.appetite else ""
        rows.append(("Stories", f"{len(stories.stories)}{appetite}"))
        layers = Counter(s.layer for s in stories.stories)
        rows.append(("By layer", " · ".join(f"{md(k)} {v}" for k, v in sorted(layers.items()))))
        by_id = {s.id: s.title for s in stories.stories}
        first = [by_id.get(i, i) for i in (stories.order or list(by_id))]
        rows.append(("Build order starts with", _few(first, 3)))
        rows.append(("Dependency cycles", str(len(stories.cycles)) if stories.cycles else "none"))
    return rows


SUMMARY = {Phase.WHY: _why, Phase.WHAT: _what, Phase.HOW: _how, Phase.STORIES: _stories}


def _summary(phase: Phase, state: SessionState) -> None:
    """What this phase decided, on one screen: its key fields, its stages, its checks."""
    st.subheader("What this phase decided")
    with st.container(border=True, key="gate_summary"):
        try:
            rows = SUMMARY[phase](state)
        except Exception:  # an older or partial payload: the details below still show it
            rows = []
        if rows:
            st.markdown("  \n".join(f"**{k}:** {v}" for k, v in rows))
        elif not any(s.slug in state.outputs for s in phase_stages(phase)):
            st.caption("No stage of this phase has run yet.")
        stages = []
        for spec in phase_stages(phase):
            meta = state.stage_meta.get(spec.slug)
            if spec.slug not in state.outputs:
                stages.append(f"{spec.title}: not run yet")
            elif meta is not None and meta.status != "completed":
                n = len(meta.problems)
                stages.append(
                    f":orange[{spec.title}: {STAGE_STATUS.get(meta.status, md(meta.status))}"
                    + (f" ({n} failed check{'s' if n != 1 else ''})" if n else "")
                    + "]"
                )
            else:
                stages.append(f"{spec.title}: done")
        st.caption("Stages — " + " · ".join(stages) + "  \nChecks — " + checks_line(phase, state))
        if phase is Phase.WHY and payload_of(state.outputs, VERDICT_STAGE.slug) is not None:
            link("verdict", "Scorecard and knockouts on the Verdict page", ":material/gavel:")


# -- 3. details on demand ----------------------------------------------------------------------
def _details(
    b: Backend,
    sid: str,
    phase: Phase,
    state: SessionState,
    editable: bool,
) -> None:
    st.subheader("Details")
    with st.expander("The idea, as you wrote it", icon=":material/lightbulb:"):
        show_idea(state.idea)
    if phase is Phase.WHY:
        anchor_details(b, sid, state, editable)
    _outputs(phase, state)
    with st.expander("Phase verification", icon=":material/verified:"):
        verification(phase, state)
    with st.expander("Validator findings", icon=":material/rule:"):
        validator_findings(phase, state)


def _outputs(phase: Phase, state: SessionState) -> None:
    """Each stage's output once: its summary, its Markdown and its claims (when opened)."""
    for spec in phase_stages(phase):
        out = state.outputs.get(spec.slug)
        if out is None:
            continue
        box = st.expander(
            f"{spec.number}. {spec.title}",
            key=f"output_{spec.slug}",
            on_change="rerun",
            icon=":material/description:",
        )
        if not box.open:  # rendered only when opened: keeps the gate page light
            continue
        meta = state.stage_meta.get(spec.slug)
        if meta is not None:
            tries = f" · {meta.attempts} attempts" if meta.attempts > 1 else ""
            box.caption(f"Status: {STAGE_STATUS.get(meta.status, md(meta.status))}{tries}")
        box.markdown(f"**In short:** {md(out.tldr)}")
        box.markdown(safe_markdown(out.content))
        if out.claims:
            box.markdown(
                "**Claims**  \n"
                + "  \n".join(
                    f"• {md(c.statement)} *({md(c.shown_source)})*"
                    + (f" — {md(c.evidence)}" if c.evidence else "")
                    for c in out.claims
                )
            )
