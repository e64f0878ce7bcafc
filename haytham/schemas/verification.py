"""What verifiers and reviewers say about a phase (ADR-022 1d, seed 004)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationError, field_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel

Severity = Literal["blocking", "warning"]


class InvariantViolation(TolerantModel):
    """An invariant a stage broke, how it broke it and whether that holds the gate."""

    invariant: str
    violation: str
    severity: Severity
    stage: str = Field(description="Slug of the stage where it happened.")


class GenericizationFlag(TolerantModel):
    """A distinctive feature of the idea that a stage replaced by a generic one."""

    original_feature: str
    generic_replacement: str
    stage: str


AUDIT_VERDICTS = ("honours", "weakens", "contradicts", "unrelated")
_AUDIT_SPELLINGS = {
    "honors": "honours",
    "honoured": "honours",
    "honored": "honours",
    "honour": "honours",
    "honor": "honours",
    "keeps": "honours",
    "weaken": "weakens",
    "weakened": "weakens",
    "contradict": "contradicts",
    "contradicted": "contradicts",
    "violates": "contradicts",
    "violated": "contradicts",
    "not_related": "unrelated",
    "irrelevant": "unrelated",
    "not_about_it": "unrelated",
}


class CarrierAudit(TolerantModel):
    """One row of the carrier audit: does an item's own text keep the invariant it claims?"""

    invariant: str = Field(description="The invariant id as in the table (INV-3, or INV-3a).")
    item: str = Field(description="The item id as in the table (SCOPE-2, CAP-F-001, ...).")
    verdict: str = Field(
        description="honours | weakens | contradicts | unrelated",
        json_schema_extra={"enum": list(AUDIT_VERDICTS)},
    )
    quote: str = Field(
        default="", description="Words copied exactly from the item's text that show it."
    )
    # Set by code, never by the model:
    stage: SkipJsonSchema[str] = ""
    quote_found: SkipJsonSchema[bool | None] = None

    @field_validator("verdict", mode="before")
    @classmethod
    def _near_verdict(cls, v: object) -> object:
        """A near-miss spelling maps to one of the four; anything else is kept and ignored."""
        if not isinstance(v, str):
            return "" if v is None else str(v)
        key = "_".join(v.strip().lower().replace("-", " ").split())
        return _AUDIT_SPELLINGS.get(key, key)


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
    carrier_audit: list[CarrierAudit] = Field(
        default_factory=list,
        description="One row per (invariant, item) of the carrier table, when the task has one.",
    )
    # Set by code, never by the model:
    status: SkipJsonSchema[Literal["passed", "failed", "inconclusive", "off"]] = "passed"
    reason: SkipJsonSchema[str] = ""
    strategy: SkipJsonSchema[str] = "single"
    round: SkipJsonSchema[int] = 0
    checked: SkipJsonSchema[Fingerprint | None] = None  # what it verified (set by code)

    @field_validator("carrier_audit", mode="before")
    @classmethod
    def _valid_rows_only(cls, v: object) -> object:
        """A malformed audit row is dropped, never a reason to reject the verdict."""
        rows = v if isinstance(v, list) else [v] if isinstance(v, dict) else []
        kept = []
        for row in rows:
            try:
                kept.append(CarrierAudit.model_validate(row))
            except ValidationError:
                continue
        return kept

    def blocking(self) -> list[InvariantViolation]:
        """The violations that hold the phase's gate until fixed or overridden."""
        return [v for v in self.invariants_violated if v.severity == "blocking"]


class ReviewIssue(TolerantModel):
    """One problem a review raises about a stage, blocking or a warning."""

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
