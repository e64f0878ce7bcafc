"""What the checks say about a phase: the verifier's PhaseVerification and validator findings."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from components.safe_text import badge_label, md

from haytham.pipeline.state import SessionState
from haytham.stages import Phase, phase_stages

STATUS = {
    "passed": ("green", ":material/verified:", "passed"),
    "failed": ("red", ":material/report:", "failed"),
    "inconclusive": ("orange", ":material/help:", "inconclusive"),
    "off": ("gray", ":material/toggle_off:", "off"),
}


def verification(phase: Phase, state: SessionState) -> None:
    """The verifier's verdict on ``phase`` (ADR-022 1d), or why there is none."""
    st.subheader("Phase verification")
    data = state.verifications.get(phase.value)
    if data is None:
        st.info("The verifier has not run for this phase yet.")
        return
    status = data.status
    color, icon, label = STATUS.get(status, STATUS["failed"])
    strategy = data.strategy
    st.badge(
        f"Verifier: {label}"
        + (f" · {badge_label(strategy)}" if strategy and strategy != status else ""),
        color=color,
        icon=icon,
    )  # type: ignore[arg-type]
    if status == "off":
        st.caption(
            f"Verification is off for this session ({md(data.reason)}); only "
            "the validators below checked this phase."
        )
    elif status == "inconclusive":
        st.warning(
            f"The verifier could not decide: {md(data.reason)}. This blocks "
            "approval until you override it or request rework.",
            icon=":material/help:",
        )
    for name in data.invariants_honored:
        st.markdown(f":green[✔] honored: **{md(name)}**")
    for v in data.invariants_violated:
        text = f"**{md(v.invariant)}** in {md(v.stage)}: {md(v.violation)}"
        if v.severity == "blocking":
            st.error(f"Blocking violation — {text}", icon=":material/block:")
        else:
            st.warning(f"Warning — {text}", icon=":material/warning:")
    for name in data.identity_preserved:
        st.markdown(f":green[✔] identity preserved: {md(name)}")
    for g in data.identity_genericized:
        st.warning(
            f"Genericized in {md(g.stage)}: “{md(g.original_feature)}” "
            f"became “{md(g.generic_replacement)}”",
            icon=":material/compress:",
        )
    for w in data.warnings:
        st.warning(md(w), icon=":material/warning:")


def validator_findings(phase: Phase, state: SessionState) -> None:
    """Deterministic validators' findings and failed mechanical checks for the phase's stages.

    Findings that need a decision (warning, blocking, failed checks) come first, each naming the
    stage, the item, the invariant and why; prose-only second opinions (``info``) are folded away.
    """
    st.subheader("Validator findings")
    rows, second = [], []
    for spec in phase_stages(phase):
        for f in state.validations.get(spec.slug, []):
            row = {
                "stage": spec.slug,
                "severity": f.severity,
                "item": f.item or "",
                "invariant": f.invariant or "",
                "why": f.message,
                "evidence": f.evidence,
                "validator": f.validator,
            }
            (rows if f.needs_decision else second).append(row)
        meta = state.stage_meta.get(spec.slug)
        for problem in meta.problems if meta else []:
            rows.append(
                {
                    "stage": spec.slug,
                    "severity": "blocking",
                    "item": "",
                    "invariant": "",
                    "why": problem,
                    "evidence": "",
                    "validator": "stage check",
                }
            )
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True)
    else:
        ran = any(spec.slug in state.validations for spec in phase_stages(phase))
        st.caption(
            "No findings that need a decision."
            if ran
            else "No validator has run on this phase yet."
        )
    if second:
        with st.expander(f"Second opinions from prose checks ({len(second)})"):
            st.caption("Weak signals read from wording; they never block and need no decision.")
            st.dataframe(pd.DataFrame(second), hide_index=True)
