"""The record of every decision: who approved, rejected, reworked, overrode (with the reason),
clarified, edited the anchor, asked for a change, forked, deleted or exported what, when, from
which instance and at which gate round.

The record is append-only and kept outside the sessions it is about (a deleted session's record
stays): ``_audit/decisions.jsonl`` in the sessions folder, the ``haytham_audit`` table in the
shared database (where rules turn any UPDATE or DELETE into nothing). Each line is one
:class:`Decision` as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from haytham.people.access import Actor
from haytham.safety.redact import redact_tree
from haytham.storage.protocol import Store, now

VERBS = {
    "create": "started",
    "import": "imported",
    "approve": "approved",
    "reject": "rejected",
    "rework": "sent back for rework",
    "override": "overrode a blocking finding",
    "clarify": "clarified the anchor",
    "clarify_all": "clarified the anchor",
    "edit": "edited the anchor",
    "remove_non_goal": "edited the anchor",
    "change_request": "applied a change request",
    "clear_from": "cleared from a stage",
    "fork": "forked",
    "delete": "deleted",
    "export": "exported",
}
"""How a record's action reads in pages, exports and PDFs."""
NOT_DECISIONS = frozenset({"export", "import"})
"""Actions on the record that exports leave out of their "Decisions on record" list (and that
stay in their store when a session moves)."""


class Decision(BaseModel):
    """One line of the decision record."""

    at: str
    actor: str  # the actor's id (e-mail or name)
    actor_label: str  # "Name <email>" as shown
    on_behalf_of: str | None = None
    instance: str  # host:pid of the process that wrote it
    action: str
    session_id: str
    gate: int | None = None
    round: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """``approved by Rita <rita@x.org> on 2026-11-27 09:12 UTC`` (with gate and round)."""
        verb = VERBS.get(self.action, self.action.replace("_", " "))
        when = datetime.fromisoformat(self.at).strftime("%Y-%m-%d %H:%M UTC")
        where = f"Gate {self.gate}, round {self.round}: " if self.gate else ""
        why = self.detail.get("reason") or self.detail.get("note") or ""
        return f"{where}{verb} by {self.actor_label} on {when}" + (f" ({why})" if why else "")


def record(
    store: Store,
    actor: Actor,
    action: str,
    session_id: str,
    *,
    gate: int | None = None,
    round_: int | None = None,
    **detail: Any,
) -> Decision:
    """Append one decision to ``store``'s record (credentials in ``detail`` are redacted)."""
    entry = Decision(
        at=now(),
        actor=actor.id,
        actor_label=actor.label,
        on_behalf_of=actor.on_behalf_of,
        instance=actor.instance,
        action=action,
        session_id=session_id,
        gate=gate,
        round=round_,
        detail=redact_tree({k: v for k, v in detail.items() if v not in (None, "")}),
    )
    store.append_audit(entry.model_dump_json(), session_id, actor.id)
    return entry


def decisions(
    store: Store, *, session_id: str | None = None, user: str | None = None
) -> list[Decision]:
    """The record, oldest first, of one session and/or one user (``None``: all)."""
    return list(_parse(store.audit_lines(session_id, user)))


def _parse(lines: Iterable[str]) -> Iterable[Decision]:
    for line in lines:
        try:
            yield Decision.model_validate_json(line)
        except ValidationError:  # a torn last line (power loss) was never committed
            continue
