"""A change request as applied to a stage (see :mod:`haytham.changes.request`), and what a change does to
the anchor's invariants (computed by :mod:`haytham.changes.impact`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Change(BaseModel):
    """One difference between the stage's output before and after (computed by code)."""

    kind: Literal["added", "removed", "changed"]
    where: str  # a payload field, or field[item id]
    before: str = ""
    after: str = ""


class InvariantImpact(BaseModel):
    """What one change does to one invariant, computed by code from the items before and after
    (by id). ``broken`` is code's finding, whatever the agent said; ``notes`` say it in words."""

    invariant: str  # INV-n
    carriers_added: list[str] = Field(default_factory=list)  # IN items that now carry it
    carriers_removed: list[str] = Field(default_factory=list)  # IN items that no longer do
    moved_out: list[str] = Field(default_factory=list)  # items moved IN -> OUT that carried it
    moved_in: list[str] = Field(default_factory=list)  # items moved OUT -> IN that carry it
    honours_added: list[str] = Field(default_factory=list)  # OUT items now honouring it
    honours_removed: list[str] = Field(default_factory=list)  # OUT items no longer honouring it
    traits: list[str] = Field(default_factory=list)  # its pinned trait's values, "a -> b"
    broken: bool = False
    notes: list[str] = Field(default_factory=list)  # one plain sentence each


class Impact(BaseModel):
    """A change's impact on the invariants: computed by code, beside the agent's own answer
    (its second opinion, kept so disagreements can be shown)."""

    invariants: list[InvariantImpact] = Field(default_factory=list)
    agent_touched: list[str] = Field(default_factory=list)
    agent_breaks: list[str] = Field(default_factory=list)

    @property
    def touched(self) -> list[str]:
        """Ids of the invariants the change touches, by code's diff."""
        return [i.invariant for i in self.invariants]

    @property
    def broken(self) -> list[str]:
        """Ids of the invariants the change breaks, by code's diff."""
        return [i.invariant for i in self.invariants if i.broken]

    @property
    def refused_for(self) -> list[str]:
        """Invariants that stop the change: code's broken ones, plus any the agent says break
        (a second opinion code cannot rule out), in anchor order of first mention."""
        return list(dict.fromkeys([*self.broken, *self.agent_breaks]))

    def disagreements(self) -> list[str]:
        """Where code's impact and the agent's answer differ, one sentence each."""
        out = [
            f"{i} is broken by this change (code's check), though the agent said it breaks "
            "nothing there."
            for i in self.broken
            if i not in self.agent_breaks
        ]
        out += [
            f"The agent says {i} breaks; code found no carrier lost and no pin contradicted, "
            "so it is refused on the agent's word."
            for i in self.agent_breaks
            if i not in self.broken
        ]
        out += [
            f"The change touches {i} (code's diff); the agent did not list it."
            for i in self.touched
            if i not in (*self.agent_touched, *self.agent_breaks, *self.broken)
        ]
        out += [
            f"The agent lists {i} as touched; code found no change to the items that carry it."
            for i in self.agent_touched
            if i not in self.touched and i not in self.agent_breaks
        ]
        return out


class Revision(BaseModel):
    """A change request as applied: on the record, in exports and in the stage's history."""

    stage: str
    request: str
    why: str = ""
    invariants_touched: list[str] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    impact: Impact | None = None  # computed by code (None on revisions recorded before it)
    at: str
