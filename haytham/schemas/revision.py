"""A change request as applied to a stage (see :mod:`haytham.revise`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Change(BaseModel):
    """One difference between the stage's output before and after (computed by code)."""

    kind: Literal["added", "removed", "changed"]
    where: str  # a payload field, or field[item id]
    before: str = ""
    after: str = ""


class Revision(BaseModel):
    """A change request as applied: on the record, in exports and in the stage's history."""

    stage: str
    request: str
    why: str = ""
    invariants_touched: list[str] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    at: str
