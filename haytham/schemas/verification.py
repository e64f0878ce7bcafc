"""What verifiers and reviewers say about a phase (ADR-022 1d, seed 004)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel

Severity = Literal["blocking", "warning"]


class InvariantViolation(TolerantModel):
    invariant: str
    violation: str
    severity: Severity
    stage: str = Field(description="Slug of the stage where it happened.")


class GenericizationFlag(TolerantModel):
    original_feature: str
    generic_replacement: str
    stage: str


class Fingerprint(TolerantModel):
    """What a check depended on when it ran: the anchor's digest (``None``: it did not use the
    anchor) and a digest of each stage output it read. A check whose recorded digests differ from
    the current ones is stale (see :mod:`haytham.pipeline.staleness`)."""

    anchor: str | None = None
    outputs: dict[str, str] = Field(default_factory=dict)
    at: str | None = None


class PhaseVerification(TolerantModel):
    """A verifier's verdict on one phase against the anchor."""

    phase: str
    passed: bool
    invariants_honored: list[str] = Field(default_factory=list)
    invariants_violated: list[InvariantViolation] = Field(default_factory=list)
    identity_preserved: list[str] = Field(default_factory=list)
    identity_genericized: list[GenericizationFlag] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    # Set by code, never by the model:
    status: SkipJsonSchema[Literal["passed", "failed", "inconclusive", "off"]] = "passed"
    reason: SkipJsonSchema[str] = ""
    strategy: SkipJsonSchema[str] = "single"
    round: SkipJsonSchema[int] = 0
    checked: SkipJsonSchema[Fingerprint | None] = None  # what it verified (set by code)

    def blocking(self) -> list[InvariantViolation]:
        return [v for v in self.invariants_violated if v.severity == "blocking"]


class ReviewIssue(TolerantModel):
    severity: Severity
    stage: str
    detail: str


class ReviewArtifact(TolerantModel):
    """Rework feedback as a first-class artifact (seed 004), injected into the stage's prompt."""

    verdict: Literal["pass", "rework", "fail"]
    issues: list[ReviewIssue] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    source: Literal["verifier", "reviewer", "validator"] = "reviewer"
    round: int = 1
