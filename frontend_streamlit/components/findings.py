"""What the checks say about a phase: the verifier's PhaseVerification and validator findings.

What blocks the gate (blocking violations, an inconclusive verification, failed stage checks,
blocking findings) is listed once, in the decision panel; here are the rest, in full: what was
honored, warnings, genericized identity features, and the validators' warnings and second
opinions. Every message is shown whole (no table cell cuts it off). A check made before the
anchor or an output it checked changed is stale: it never shows green (no "passed", no ✔), only
what it found then, marked as such.
"""

from __future__ import annotations

from typing import Literal

import streamlit as st

from frontend_streamlit.components.safe_text import badge_label, md, no_paths
from haytham.pipeline.staleness import StaleCheck, stale_checks
from haytham.schemas.verification import PhaseVerification
from haytham.stages import Phase, get_stage, phase_stages
from haytham.state import SessionState
from haytham.validate.model import Finding

# The colours st.badge takes that these badges use.
BadgeColor = Literal["green", "red", "orange", "gray"]
STATUS: dict[str, tuple[BadgeColor, str, str]] = {
    "passed": ("green", ":material/verified:", "passed"),
    "failed": ("red", ":material/report:", "failed"),
    "inconclusive": ("orange", ":material/help:", "inconclusive"),
    "off": ("gray", ":material/toggle_off:", "off"),
}
SEVERITY = {"blocking": "Blocking", "warning": "Warning", "info": "Second opinion"}
IN_PANEL = "listed in the decision panel above"


def _stage(slug: str | None) -> str:
    if not slug:
        return ""
    try:
        return get_stage(slug).title
    except Exception:  # an unknown slug from an older session: shown as it is
        return slug


def _validator(name: str) -> str:
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def stale_here(phase: Phase, state: SessionState) -> list[StaleCheck]:
    """The phase's checks made before the anchor or an output they checked changed."""
    return stale_checks(state, phase)


def checks_line(phase: Phase, state: SessionState) -> str:
    """One line for the gate's summary: the verifier's result and the findings' counts."""
    data = state.verifications.get(phase.value)
    stale = stale_here(phase, state)
    verifier_stale = any(c.stage is None for c in stale)
    if data is None:
        parts = ["no verifier"]
    elif verifier_stale:
        parts = [":orange[verifier result is stale (re-check it)]"]
    else:
        parts = [f"verifier {STATUS.get(data.status, STATUS['failed'])[2]}"]
    n_stale = sum(1 for c in stale if c.stage is not None)
    if n_stale:
        parts.append(f":orange[{n_stale} stage check{'s' if n_stale != 1 else ''} stale]")
    findings = [f for s in phase_stages(phase) for f in state.validations.get(s.slug, [])]
    failed = sum(
        len(m.problems) for s in phase_stages(phase) if (m := state.stage_meta.get(s.slug))
    )
    for severity, word in (("blocking", "blocking finding"), ("warning", "warning")):
        n = sum(1 for f in findings if f.severity == severity)
        if n:
            parts.append(f"{n} {word}" + ("" if n == 1 else "s"))
    if failed:
        parts.append(f"{failed} failed check" + ("" if failed == 1 else "s"))
    if len(parts) == 1:
        parts.append("no validator finding needs a decision")
    return " · ".join(parts)


def verification(phase: Phase, state: SessionState) -> None:
    """The verifier's verdict on ``phase`` (ADR-022 1d), or why there is none."""
    data = state.verifications.get(phase.value)
    if data is None:
        st.info("The verifier has not run for this phase yet.")
        return
    status = data.status
    color, icon, text = STATUS.get(status, STATUS["failed"])
    stale = [c for c in stale_here(phase, state) if c.stage is None]
    if stale:  # a stale verdict is never shown green
        color, icon, text = "orange", ":material/history:", f"stale (it said {text} before)"
        st.caption(
            f"Made before {md(', '.join(stale[0].changed))} changed: what it found then is "
            "listed below without marks; re-check to verify the phase as it is now."
        )
    strategy = data.strategy
    st.badge(
        f"Verifier: {text}"
        + (f" · {badge_label(strategy)} review" if strategy and strategy != status else ""),
        color=color,
        icon=icon,
    )
    if status == "off":
        st.caption(
            f"Verification is off for this session ({md(data.reason)}); only "
            "the validators checked this phase."
        )
    elif status == "inconclusive":
        st.caption(f"The verifier could not decide: {md(no_paths(data.reason))} ({IN_PANEL}).")
    if data.invariants_honored:
        st.markdown(
            ("honored before the change (stale): " if stale else ":green[✔] honored: ")
            + ", ".join(f"**{md(n)}**" for n in data.invariants_honored)
        )
    blocking = data.blocking()
    if blocking:
        st.markdown(
            f":red[✘] {len(blocking)} blocking violation"
            + ("" if len(blocking) == 1 else "s")
            + f" ({IN_PANEL}): "
            + ", ".join(f"**{md(v.invariant)}** in {md(_stage(v.stage))}" for v in blocking)
        )
    for v in data.invariants_violated:
        if v.severity != "blocking":
            st.warning(
                f"Warning — **{md(v.invariant)}** in {md(_stage(v.stage))}: {md(v.violation)}",
                icon=":material/warning:",
            )
    if data.carrier_audit:
        st.markdown(audit_line(data))
    if data.identity_preserved:
        st.markdown(
            (
                "identity preserved before the change (stale): "
                if stale
                else ":green[✔] identity preserved: "
            )
            + ", ".join(md(n) for n in data.identity_preserved)
        )
    for g in data.identity_genericized:
        st.warning(
            f"Genericized in {md(_stage(g.stage))}: “{md(g.original_feature)}” "
            f"became “{md(g.generic_replacement)}”",
            icon=":material/compress:",
        )
    for w in data.warnings:
        st.warning(md(w), icon=":material/warning:")


AUDIT_WORDS = {
    "honours": "honour it",
    "weakens": "weaken it",
    "contradicts": "contradict it",
    "unrelated": "are about something else",
}


def audit_line(data: PhaseVerification) -> str:
    """One line on the carrier audit: how many (invariant, item) claims the verifier read and
    what it found; contradictions and dropped invariants are in the decision panel."""
    counts = {v: sum(1 for r in data.carrier_audit if r.verdict == v) for v in AUDIT_WORDS}
    found = ", ".join(f"{n} {AUDIT_WORDS[v]}" for v, n in counts.items() if n)
    bad = counts["contradicts"] + counts["weakens"]
    mark = ":red[✘]" if counts["contradicts"] else ":orange[!]" if bad else ":green[✔]"
    n = len(data.carrier_audit)
    return (
        f"{mark} carrier audit: {n} claim"
        + ("" if n == 1 else "s")
        + f" that an item carries an invariant, read against the item's own text: {found}"
        + (f" ({IN_PANEL})" if counts["contradicts"] else "")
    )


def _line(f: Finding, slug: str) -> str:
    where = " · ".join(md(x) for x in (_stage(f.stage or slug), f.item, f.invariant) if x)
    evidence = f"  \nEvidence: {md(f.evidence)}" if f.evidence else ""
    return (
        f"**{SEVERITY.get(f.severity, md(f.severity))}** · {where} — {md(f.message)} "
        f"*({md(_validator(f.validator))})*{evidence}"
    )


def validator_findings(phase: Phase, state: SessionState) -> None:
    """Deterministic validators' findings for the phase's stages, each in full with its stage,
    item, invariant and validator. Blocking ones and failed stage checks are in the decision
    panel; warnings are listed here; prose-only second opinions (``info``) are folded away."""
    stale = [get_stage(c.stage).title for c in stale_here(phase, state) if c.stage is not None]
    if stale:
        st.caption(
            f":orange[Stale:] the findings of {md(', '.join(stale))} were made before what they "
            "checked changed; re-check the phase for current ones."
        )
    warn: list[tuple[Finding, str]] = []
    second: list[tuple[Finding, str]] = []
    blocking = 0
    for spec in phase_stages(phase):
        for f in state.validations.get(spec.slug, []):
            if f.severity == "blocking":
                blocking += 1
            elif f.needs_decision:
                warn.append((f, spec.slug))
            else:
                second.append((f, spec.slug))
        meta = state.stage_meta.get(spec.slug)
        blocking += len(meta.problems) if meta else 0
    if blocking:
        st.markdown(f":red[✘] {blocking} blocking finding(s) or failed check(s) ({IN_PANEL}).")
    for f, slug in warn:
        st.warning(_line(f, slug), icon=":material/warning:")
    if not (blocking or warn):
        ran = any(spec.slug in state.validations for spec in phase_stages(phase))
        st.caption(
            "No findings that need a decision."
            if ran
            else "No validator has run on this phase yet."
        )
    if second:
        with st.expander(f"Second opinions from prose checks ({len(second)})"):
            st.caption("Weak signals read from wording; they never block and need no decision.")
            for f, slug in second:
                st.markdown(_line(f, slug))
