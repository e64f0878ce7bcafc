"""A gate's history on its page: a compact timeline (rounds, reworks with their feedback or the
verifier's review, overrides, clarifications, anchor edits, decisions), and for each rework what
it changed in the stages' key items, in an expander.

Reads :meth:`Haytham.gate_history` (built from every persisted step); writes nothing.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from frontend_streamlit.components.context import Backend, attempt
from frontend_streamlit.components.decision_panel import describe
from frontend_streamlit.components.decision_record import render_decision_record
from frontend_streamlit.components.safe_text import code, label, md, no_paths
from haytham.reports.history import Entry, FieldDiff, GateHistory, StageDiff

ICONS = {
    "opened": ":material/flag:",
    "auto_rework": ":material/autorenew:",
    "rework": ":material/replay:",
    "override": ":material/gavel:",
    "clarification": ":material/help:",
    "edit": ":material/edit:",
    "approved": ":material/check_circle:",
    "rejected": ":material/cancel:",
    "cleared": ":material/restart_alt:",
    "inherited": ":material/call_split:",
    "revised": ":material/edit_note:",
    "recheck": ":material/fact_check:",
}
FIELD_NAMES = {
    "in_scope": "In scope",
    "out_of_scope": "Out of scope",
    "non_functional": "Non-functional",
}
INLINE_DETAILS = 4  # more than this (a verifier's review) goes into the entry's expander
CHANGES = ("rework", "auto_rework", "revised")  # entries with a before/after diff


def render_history(b: Backend, sid: str, gate: int) -> None:
    """The gate's timeline, newest round last; nothing before the gate first opens."""
    history = attempt(lambda: b.service.gate_history(sid, gate))
    if history is None or not history.entries:
        return
    st.subheader("History")
    st.caption(_headline(history))
    st.markdown("\n".join(_line(e) for e in history.entries))
    for entry in history.entries:
        if entry.kind in CHANGES or len(entry.details) > INLINE_DETAILS:
            _details(entry)
    render_decision_record(b, sid, gate)


def _headline(history: GateHistory) -> str:
    rounds = history.rounds
    reworks = len(history.reworks)
    carried = any(e.kind == "inherited" for e in history.entries)
    parts = [
        f"{rounds} round(s)"
        if rounds
        else "decided before this session (carried over)"
        if carried
        else "not opened yet"
    ]
    if reworks:
        parts.append(f"{reworks} rework(s)")
    return f"Gate {history.gate}: " + ", ".join(parts) + "."


def when(at: str | None) -> str:
    """``at`` (ISO 8601) as ``26 Nov 08:39:12 UTC``; empty when unknown."""
    if not at:
        return ""
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return md(at)
    return moment.strftime("%d %b %H:%M:%S UTC")


def _item_title(item_id: str) -> str:
    """An overridden item's id (``violation:x:mvp-scope``) as the decision panel names it."""
    parts = item_id.split(":")
    stage = {"violation": 2, "check": 1, "finding": 2}.get(parts[0])
    where = parts[stage] if stage is not None and len(parts) > stage else None
    return describe(item_id, where, "")[1]


def _shown(entry: Entry) -> tuple[str, ...]:
    """The entry's details in plain words: item titles, never ids; no server paths."""
    if entry.kind == "override":
        return tuple(_item_title(d) for d in entry.details)
    return tuple(no_paths(d) for d in entry.details)


def _line(entry: Entry) -> str:
    stamp = when(entry.at)
    head = f"- {ICONS.get(entry.kind, '')} **Round {entry.round}** · {md(entry.summary)}"
    if stamp:
        head += f" · :gray[{stamp}]"
    lines = [head]
    if entry.feedback:
        what = {
            "override": "Reason",
            "approved": "Note",
            "rejected": "Note",
            "revised": "Request",
        }.get(entry.kind, "Feedback")
        lines.append(f"    - {what}: “{md(no_paths(' '.join(entry.feedback.split())))}”")
    shown = _shown(entry) if len(entry.details) <= INLINE_DETAILS else ()
    if entry.kind in CHANGES:
        shown = ()  # in the expander
    if entry.kind == "opened" and shown:
        lines.append("    - " + " · ".join(md(d) for d in shown))  # one line per opening
    else:
        lines += [f"    - {md(d)}" for d in shown]
    if entry.kind in CHANGES:
        lines.append(f"    - {_diff_summary(entry.diffs)}")  # stage titles and counts only
    return "\n".join(lines)


def _diff_summary(diffs: tuple[StageDiff, ...]) -> str:
    if not diffs:
        return "Waiting for the stage to run again."
    parts = []
    for d in diffs:
        added = sum(len(f.added) for f in d.fields)
        removed = sum(len(f.removed) for f in d.fields)
        changed = sum(len(f.changed) for f in d.fields)
        counts = (
            f"{added} added, {removed} removed, {changed} changed"
            if d.changes
            else "no change in its items"
        )
        parts.append(f"{d.title}: {counts}")
    return "Changed: " + "; ".join(parts)


def _details(entry: Entry) -> None:
    title = f"Round {entry.round} · {entry.summary}"
    if entry.kind == "auto_rework":
        title += " — the review and what changed"
    elif entry.kind in CHANGES:
        title += " — what changed"
    with st.expander(label(title)):
        if entry.kind == "auto_rework" and entry.details:
            st.markdown("**The review sent to the stage**")
            st.markdown("\n".join(f"- {md(d)}" for d in _shown(entry)))
        elif entry.details:
            st.markdown("\n".join(f"- {md(d)}" for d in _shown(entry)))
        if entry.kind in CHANGES:
            render_diffs(entry.diffs)


def render_diffs(diffs: tuple[StageDiff, ...]) -> None:
    """Before/after of each stage that re-ran: items added, removed and changed, by id."""
    if not diffs:
        st.caption("The stage has not run again yet.")
        return
    for d in diffs:
        if not d.changes:
            note = " (its summary changed)" if d.summary_changed else ""
            st.markdown(f"**{md(d.title)}**: re-ran; no item added, removed or changed{note}.")
        else:
            st.markdown(f"**{md(d.title)}**")
            st.markdown("\n".join(_field_lines(f) for f in d.fields if f.changes))
        render_impact(d.invariants, d.broken)


def render_impact(lines: tuple[str, ...] | list[str], broken: tuple[str, ...] | list[str]) -> None:
    """What a change did to the invariants, as code computed it (broken ones in red)."""
    if not lines:
        st.caption("Invariants: no item that carries one changed (code's check).")
        return
    head = (
        f":red[**Breaks {md(', '.join(broken))}**] (code's check)"
        if broken
        else "**Invariants touched** (code's check)"
    )
    shown = [
        f"- :red[{md(line.removeprefix('BROKEN: '))}]"
        if line.startswith("BROKEN: ")
        else f"- {md(line)}"
        for line in lines
    ]
    st.markdown("\n".join([head, *shown]))


def _field_lines(f: FieldDiff) -> str:
    name = FIELD_NAMES.get(f.field, f.field.replace("_", " ").capitalize())
    lines = [f"- {md(name)} ({f.unchanged} unchanged)"]
    lines += [f"    - :green[added] {code(i.id)} {md(i.title)}" for i in f.added]
    lines += [f"    - :red[removed] {code(i.id)} {md(i.title)}" for i in f.removed]
    for c in f.changed:
        title = md(c.title)
        if c.before_title != c.title:
            title = f"{md(c.before_title)} → {title}"
        fields = ", ".join(c.fields)
        lines.append(f"    - :orange[changed] {code(c.id)} {title} ({md(fields)})")
    return "\n".join(lines)
