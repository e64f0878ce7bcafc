"""One line of ``events.jsonl``: the append-only audit trail of a session."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

INPUTS_PREFIX = "validate-input:"
"""The event stage of receiving-stage validation before a stage: ``validate-input:<slug>``."""


class Event(BaseModel):
    """One audit entry: when, what happened (``type``), to which stage, and its details."""

    ts: str
    type: str = Field(description="stage_started, stage_completed, stage_failed, model_call, …")
    stage: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
