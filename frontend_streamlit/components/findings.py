"""What the checks say about a phase: the verifier's PhaseVerification and validator findings."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from components.safe_text import badge_label, md

from haytham.stages import Phase, phase_stages

STATUS = {
    "passed": ("green", ":material/verified:", "passed"),
    "failed": ("red", ":material/report:", "failed"),
    "inconclusive": ("orange", ":material/help:", "inconclusive"),
    "off": ("gray", ":material/toggle_off:", "off"),
}


def verification(phase: Phase, state: dict[str, Any]) -> None:
    """The verifier's verdict on ``phase`` (ADR-022 1d), or why there is none."""
    st.subheader("Phase verification")
    data = (state.get("verifications") or {}).get(phase.value)
    if not data:
        st.info("The verifier has not run for this phase yet.")
        return
    status = data.get("status") or ("passed" if data.get("passed") else "failed")
    color, icon, label = STATUS.get(status, STATUS["failed"])
    strategy = data.get("strategy", "")
    st.badge(
        f"Verifier: {label}"
        + (f" · {badge_label(strategy)}" if strategy and strategy != status else ""),
        color=color,
        icon=icon,
    )  # type: ignore[arg-type]
    if status == "off":
        st.caption(
            f"Verification is off for this session ({md(data.get('reason', ''))}); only "
            "the validators below checked this phase."
        )
    elif status == "inconclusive":
        st.warning(
            f"The verifier could not decide: {md(data.get('reason', ''))}. This blocks "
            "approval until you override it or request rework.",
            icon=":material/help:",
        )
    for name in data.get("invariants_honored", []):
        st.markdown(f":green[✔] honored: **{md(name)}**")
    for v in data.get("invariants_violated", []):
        text = f"**{md(v.get('invariant'))}** in {md(v.get('stage'))}: {md(v.get('violation'))}"
        if v.get("severity") == "blocking":
            st.error(f"Blocking violation — {text}", icon=":material/block:")
        else:
            st.warning(f"Warning — {text}", icon=":material/warning:")
    for name in data.get("identity_preserved", []):
        st.markdown(f":green[✔] identity preserved: {md(name)}")
    for g in data.get("identity_genericized", []):
        st.warning(
            f"Genericized in {md(g.get('stage'))}: “{md(g.get('original_feature'))}” "
            f"became “{md(g.get('generic_replacement'))}”",
            icon=":material/compress:",
        )
    for w in data.get("warnings", []):
        st.warning(md(w), icon=":material/warning:")


def validator_findings(phase: Phase, state: dict[str, Any]) -> None:
    """Deterministic validators' findings and failed mechanical checks for the phase's stages.

    Findings that need a decision (warning, blocking, failed checks) come first, each naming the
    stage, the item, the invariant and why; prose-only second opinions (``info``) are folded away.
    """
    st.subheader("Validator findings")
    rows, second = [], []
    for spec in phase_stages(phase):
        for f in (state.get("validations") or {}).get(spec.slug, []):
            row = {
                "stage": spec.slug,
                "severity": f.get("severity", ""),
                "item": f.get("item") or "",
                "invariant": f.get("invariant") or "",
                "why": f.get("message", ""),
                "evidence": f.get("evidence", ""),
                "validator": f.get("validator", ""),
            }
            (second if f.get("severity") == "info" else rows).append(row)
        for problem in ((state.get("stage_meta") or {}).get(spec.slug) or {}).get("problems", []):
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
        ran = any(spec.slug in (state.get("validations") or {}) for spec in phase_stages(phase))
        st.caption(
            "No findings that need a decision."
            if ran
            else "No validator has run on this phase yet."
        )
    if second:
        with st.expander(f"Second opinions from prose checks ({len(second)})"):
            st.caption("Weak signals read from wording; they never block and need no decision.")
            st.dataframe(pd.DataFrame(second), hide_index=True)
