"""The StageOutput envelope (ADR-022 Part 6): every stage answers in this shape.

``tldr`` feeds the next stages' context, ``anchor_compliance`` and ``claims`` make checks
programmatic, ``content`` is the markdown people read, ``payload`` is the stage's typed data.
Each stage subclasses :class:`StageOutput` and narrows ``payload`` to its own model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.schemas.base import TolerantModel
from haytham.schemas.ids import as_refs
from haytham.schemas.traits import normalise_assumes

TLDR_MAX_WORDS = 300
INVARIANT_REF = r"^INV-\d{1,2}[a-j]?$"


Source = Literal["web_search", "estimate", "unsourced"]
UNBACKED = "no logged search supports it"


def shown_source(source: str, claimed: str | None) -> str:
    """A source as people read it: ``unsourced (said web search; no logged search supports
    it)`` when code downgraded the label the stage gave."""
    word = source.replace("_", " ")
    if claimed and claimed != source:
        return f"{word} (said {claimed.replace('_', ' ')}; {UNBACKED})"
    return word


class Claim(TolerantModel):
    """A factual statement a stage makes, with where it comes from (a search, an estimate or
    nothing) so the validators can check and the reports can label it."""

    statement: str = Field(min_length=1)
    source: Source = Field(description="web_search only when a search tool result supports it.")
    evidence: str | None = Field(default=None, description="URL, tool result or reasoning.")
    # Set by code only (haytham.validate.claims.downgrade_unsourced): the label the stage gave
    # when no logged search backs it; ``source`` is then ``unsourced``.
    claimed_source: SkipJsonSchema[Source | None] = Field(
        default=None, exclude_if=lambda v: v is None
    )

    @property
    def shown_source(self) -> str:
        """The source in words, saying when code downgraded it."""
        return shown_source(self.source, self.claimed_source)


class Traceable(TolerantModel):
    """An item that says which anchor invariants it delivers (ADR-022 traceability by id).

    ``carries`` lists ``INV-n`` ids, or part ids (``INV-3a``) of a compound invariant; code
    maps near-misses (``inv-01``, the property name) to the anchor's ids after parsing, and only
    an id that matches no invariant (or part) is a problem.
    """

    carries: list[str] = Field(
        default_factory=list,
        description="Ids of the anchor invariants (INV-n, or a part INV-na) this item delivers "
        "or keeps true.",
        # guidance for the model (and a grammar for constrained decoders); parsing stays lenient
        # and code maps near-misses such as a property name to the id
        json_schema_extra={"items": {"type": "string", "pattern": INVARIANT_REF}},
    )

    validation_warnings: SkipJsonSchema[list[str]] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="Kept by receiving-stage validation when a later stage still rejects the "
        "item after its retries (seed 000 quality flags); code sets it, never the model.",
    )

    @field_validator("carries", mode="before")
    @classmethod
    def _listify(cls, v: object) -> object:
        return as_refs(v)


class Assuming(Traceable):
    """A traceable item that also states, as enums, what it takes for granted (issue 26).

    ``assumes`` maps a trait family to one value of its vocabulary (``{"auth": "invite_only",
    "cadence": "weekly"}``): how users join, the channel, payment, cadence, where it runs. Code
    maps near-miss spellings and drops unknown families or values; the checks compare the
    declared values with the anchor's pins and with the item's own text.
    """

    assumes: dict[str, str] = Field(
        default_factory=dict,
        description="For each trait family this item touches, the one value it assumes: "
        "auth, communication, cadence, payments, deployment, realtime (vocabulary as in the "
        'anchor\'s traits), e.g. {"auth": "invite_only", "cadence": "weekly"}.',
    )

    @field_validator("assumes", mode="before")
    @classmethod
    def _vocabulary(cls, v: object) -> object:
        return normalise_assumes(v)


class InvariantOverride(TolerantModel):
    """An invariant a stage knowingly did not honour, with why and what it means for the
    founder."""

    invariant: str = Field(description="The invariant's id (INV-n) or property name.")
    reason: str = Field(min_length=1)
    user_impact: str = Field(default="", description="What the founder should know.")


class AnchorComplianceReport(TolerantModel):
    """A stage's own account of the anchor: the invariants and identity features it kept, and
    those it overrode or genericised."""

    invariants_preserved: list[str] = Field(default_factory=list)
    invariants_overridden: list[InvariantOverride] = Field(default_factory=list)
    identity_features_preserved: list[str] = Field(default_factory=list)
    identity_features_genericized: list[str] = Field(default_factory=list)


class StageOutput(TolerantModel):
    """Envelope shared by all stages. Subclasses set ``payload`` to their own model."""

    tldr: str = Field(min_length=1, description=f"At most {TLDR_MAX_WORDS} words.")
    anchor_compliance: AnchorComplianceReport = Field(default_factory=AnchorComplianceReport)
    claims: list[Claim] = Field(default_factory=list)
    content: str = Field(min_length=1, description="Markdown for people.")
    payload: Any

    @field_validator("tldr")
    @classmethod
    def _tldr_budget(cls, v: str) -> str:
        words = len(v.split())
        if words > TLDR_MAX_WORDS:
            raise ValueError(f"tldr has {words} words; at most {TLDR_MAX_WORDS}")
        return v.strip()
