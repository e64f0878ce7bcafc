"""What a reader of an export must know first: stale or overridden checks, and where each anchor
value came from. Shared by the Markdown/JSON exports and the PDF reports (their first page)."""

from __future__ import annotations

from haytham.pipeline.staleness import describe, stale_checks
from haytham.schemas.anchor import Invariant
from haytham.schemas.gate import STALE_CHECKS
from haytham.state import SessionState


def check_caveats(state: SessionState) -> list[str]:
    """Sentences for the first page: stale checks now, and checks a person overrode."""
    out: list[str] = []
    stale = stale_checks(state)
    if stale:
        out.append(
            f"Stale checks: {describe(stale)}; their results do not reflect the session as it "
            "is now."
        )
    for n, record in sorted(state.gates.items()):
        forced = [o for o in record.overrides if o.target == STALE_CHECKS]
        items = [o for o in record.overrides if o.target != STALE_CHECKS]
        for o in forced:
            who = f" by {o.by}" if o.by else ""
            out.append(f"Gate {n} was approved with stale checks{who} (override: “{o.reason}”).")
        if items:
            auto = all(o.auto for o in items)
            out.append(
                f"Gate {n}: {len(items)} blocking check result(s) were overridden"
                + (" automatically (--auto-approve)" if auto else "")
                + f" — reason: “{items[0].reason}”."
            )
    return out


def provenance(inv: Invariant) -> str:
    """Where the value came from, in words."""
    when = f" on {inv.decided_at[:10]}" if inv.decided_at else ""
    if inv.provenance == "open":
        who = f" ({inv.decided_by}{when})" if inv.decided_by else ""
        return f"open: the founder has not decided this{who}"
    if inv.provenance == "reviewer":
        return f"clarified by {inv.decided_by or 'the reviewer'}{when}"
    if inv.provenance == "auto":
        return (
            f"auto-chosen by --auto-approve, not confirmed by anyone "
            f"({round(inv.confidence * 100)}% confident)"
        )
    return f"founder's words: “{inv.source}” ({round(inv.confidence * 100)}% confident)"


def anchor_lines(state: SessionState) -> list[str]:
    """One line per invariant: id, name, value (or open) and its provenance."""
    if state.anchor is None:
        return []
    return [
        f"{i.id} {i.property} = {i.shown_value()} — {provenance(i)}"
        for i in state.anchor.invariants
    ]


def open_questions(state: SessionState) -> list[str]:
    """The invariants the founder left open, as questions still to answer."""
    if state.anchor is None:
        return []
    return [
        f"{i.id} {i.property.replace('_', ' ')}: not decided yet (the idea says “{i.source}”)"
        for i in state.anchor.open_invariants()
    ]
