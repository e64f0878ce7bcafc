"""The validators' shared vocabulary: findings, the report, the session snapshot and settings.

The validator names, severities and :class:`ValidatorSettings` are part of the one settings object
(:mod:`haytham.config`, ``settings.validators``) and are re-exported here. Everything here is
immutable (frozen dataclass / pydantic models), so one snapshot or settings object can be shared by
concurrent sessions' threads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from haytham.config import (
    APPETITE,
    CLAIM_CONSISTENCY,
    COMPETITOR_MAP,
    EMBEDDING_CONTRADICTION,
    EMBEDDING_DIVERGENCE,
    FRAMEWORK_COHERENCE,
    INVARIANT_COVERAGE,
    TRAIT_PROPAGATION,
    VALIDATOR_NAMES,
    Severity,
    ValidatorSettings,
)
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput

__all__ = [
    "APPETITE",
    "CLAIM_CONSISTENCY",
    "COMPETITOR_MAP",
    "EMBEDDING_CONTRADICTION",
    "EMBEDDING_DIVERGENCE",
    "FRAMEWORK_COHERENCE",
    "INVARIANT_COVERAGE",
    "TRAIT_PROPAGATION",
    "VALIDATOR_NAMES",
    "Finding",
    "Severity",
    "Snapshot",
    "ValidationReport",
    "ValidatorSettings",
]


class Finding(BaseModel):
    """One problem a validator found. ``stage`` is the subject: the stage that should change."""

    model_config = ConfigDict(frozen=True)

    validator: str
    severity: Severity
    stage: str | None = Field(description="Slug of the stage the finding is about, if any.")
    invariant: str | None = Field(
        description="Anchor invariant concerned, as 'INV-n property', if any."
    )
    item: str | None = Field(
        default=None, description="The stage item concerned (SCOPE-3, CAP-F-002, STORY-004…)."
    )
    message: str
    evidence: str = ""

    @property
    def needs_decision(self) -> bool:
        """Whether a reviewer must look at it at the gate (info findings are second opinions)."""
        return self.severity != "info"


class ValidationReport(BaseModel):
    """All findings plus the per-stage divergence curve (ADR-022 7e)."""

    model_config = ConfigDict(frozen=True)

    findings: list[Finding] = Field(default_factory=list)
    divergence: dict[str, dict[str, float]] = Field(
        default_factory=dict, description='slug -> {"idea": similarity, "anchor": similarity}'
    )

    def by_validator(self, name: str) -> list[Finding]:
        """The findings of validator ``name``, every severity."""
        return [f for f in self.findings if f.validator == name]

    def blocking(self) -> list[Finding]:
        """Findings that block: warnings of a validator the settings make blocking."""
        return [f for f in self.findings if f.severity == "blocking"]

    def flagged(self) -> list[Finding]:
        """Findings at warning or worse: what the gate shows for a decision."""
        return [f for f in self.findings if f.needs_decision]


@dataclass(frozen=True)
class Snapshot:
    """What the validators read: the idea, the anchor, stage outputs by slug and tool calls.

    ``tool_calls`` holds one mapping per logged tool call: either the event's ``data``
    (``{"tool", "input", "result"}``, optionally with ``"stage"``) or the whole event
    (``{"ts", "type", "stage", "data"}``); both shapes are accepted.
    """

    idea: str
    anchor: ConceptAnchor | None
    outputs: Mapping[str, StageOutput]
    tool_calls: Sequence[Mapping[str, Any]] = ()
