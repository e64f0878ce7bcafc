"""Decision-gate records (``gates.json``): what the reviewer decided, when and why."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

GateStatus = Literal["pending", "open", "approved", "rejected", "rework_requested"]


STALE_CHECKS = "stale-checks"
"""The override target of approving a gate whose own checks are stale."""


class Override(BaseModel):
    """A blocking item the reviewer (or ``--auto-approve``) let through at a gate, with why."""

    target: str = Field(description="What was overridden: a violation, 'NO-GO', a finding.")
    reason: str = Field(min_length=1)
    auto: bool = False
    round: int = 1
    at: str
    by: str | None = None  # who (the local user name until sign-in exists)


class Clarification(BaseModel):
    """How an ambiguous invariant was settled at Gate 1: the option chosen (by a person or
    automatically), or left open."""

    invariant: str
    choice: str
    auto: bool = False
    at: str
    by: str | None = None
    open: bool = False  # the founder left it open: ``choice`` is "leave it open", not a value


class AnchorEdit(BaseModel):
    """A reviewer's change to the anchor at Gate 1: an invariant's new value or a removed
    non-goal, before and after."""

    kind: Literal["edit_value", "remove_non_goal"]
    target: str
    before: str
    after: str = ""
    at: str
    by: str | None = None


class Recheck(BaseModel):
    """The phase's validators and verifier run again against the current anchor."""

    at: str
    by: str | None = None
    why: str = ""  # "after the clarification", or the stale checks it renewed
    verification: str = ""  # the verification's status after the re-check


class GateRecord(BaseModel):
    """One gate's history: its status and round, the decision's note or rework feedback, and
    every override, clarification, anchor edit and re-check made there."""

    gate: int = Field(ge=1, le=4)
    phase: str
    status: GateStatus = "pending"
    round: int = 0  # incremented each time the gate opens; overrides apply to their round
    note: str = ""
    rework_stage: str | None = None
    feedback: str = ""
    overrides: list[Override] = Field(default_factory=list)
    clarifications: list[Clarification] = Field(default_factory=list)
    edits: list[AnchorEdit] = Field(default_factory=list)
    rechecks: list[Recheck] = Field(default_factory=list)
    opened_at: str | None = None
    decided_at: str | None = None
