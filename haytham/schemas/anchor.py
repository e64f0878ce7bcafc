"""The concept anchor (ADR-022 Part 1): a small, immutable statement of what the idea *is*.

Extracted once after idea-analysis, rendered to text and included verbatim — never truncated —
in every later stage's prompt. Only a reviewer changes it (Gate 1 clarification or edit).
"""

from __future__ import annotations

import builtins
import math
import re

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.errors import InputError
from haytham.schemas.base import TolerantModel

AMBIGUITY_THRESHOLD = 0.7
ANCHOR_TOKEN_BUDGET = 500
REQUIRED_PROPERTIES = ("access_model", "interaction_model", "session_medium")


def estimate_tokens(text: str) -> int:
    """Token estimate used for budgets: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


class Intent(TolerantModel):
    goal: str = Field(min_length=1, description="One sentence: the founder's actual ask.")
    explicit_constraints: list[str] = Field(
        default_factory=list, description="Things the founder stated or clearly implied."
    )
    non_goals: list[str] = Field(
        default_factory=list, description="Things the founder did NOT ask for (inferred)."
    )


class Invariant(TolerantModel):
    """A property every later stage must honour (or explicitly override with a reason)."""

    property: str = Field(min_length=1, description="snake_case name, e.g. access_model.")
    value: str = Field(min_length=1, description="The required value or condition.")
    source: str = Field(min_length=1, description="Exact quote or close paraphrase of the idea.")
    confidence: float = Field(
        ge=0.0, le=1.0, description="Extraction confidence; < 0.7 = ambiguous."
    )
    ambiguity: str | None = Field(default=None, description="If confidence < 0.7: what is unclear.")
    clarification_options: list[str] = Field(
        default_factory=list, description="If confidence < 0.7: 2-3 concrete choices."
    )
    # Set by code only (a reviewer's choice, or --auto-approve); hidden from the model's schema.
    user_clarified: SkipJsonSchema[bool] = False
    auto_resolved: SkipJsonSchema[bool] = False

    @field_validator("property")
    @classmethod
    def _snake_case(cls, v: str) -> str:
        name = _snake(v)
        if not name:
            raise ValueError("property must contain letters or digits")
        return name

    @field_validator("clarification_options", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return [] if v is None else v

    @field_validator("clarification_options")
    @classmethod
    def _no_blank_options(cls, v: list[str]) -> list[str]:
        return [o.strip() for o in v if o.strip()]

    @model_validator(mode="after")
    def _ambiguity_needs_options(self) -> Invariant:
        if self.confidence < AMBIGUITY_THRESHOLD:
            if not (self.ambiguity or "").strip():
                raise ValueError(
                    f"invariant {self.property!r} has confidence {self.confidence:.2f} < 0.7 "
                    "and must explain its ambiguity"
                )
            options = [o for o in self.clarification_options if o.strip()]
            if not 2 <= len(options) <= 3:
                raise ValueError(
                    f"invariant {self.property!r} has confidence {self.confidence:.2f} < 0.7 "
                    "and must offer 2-3 clarification options"
                )
        return self

    @builtins.property  # the field named ``property`` shadows the builtin in this class body
    def is_ambiguous(self) -> bool:
        return self.confidence < AMBIGUITY_THRESHOLD

    def resolved(self, choice: str, *, by_user: bool) -> Invariant:
        """This invariant with ``choice`` applied as in ADR-022 1c."""
        return Invariant(
            property=self.property,
            value=choice,
            source=self.source,
            confidence=1.0,
            ambiguity=None,
            clarification_options=[],
            user_clarified=by_user,
            auto_resolved=not by_user,
        )


class IdentityFeature(TolerantModel):
    feature: str = Field(min_length=1, description="The distinctive element of the idea.")
    why_distinctive: str = Field(default="", description="Why an LLM is likely to genericize it.")


class ConceptAnchor(TolerantModel):
    """intent + invariants + identity, per ADR-022 Part 1."""

    intent: Intent
    invariants: list[Invariant] = Field(min_length=1)
    identity: list[IdentityFeature] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_properties(self) -> ConceptAnchor:
        seen: set[str] = set()
        for inv in self.invariants:
            if inv.property in seen:
                raise ValueError(f"invariant {inv.property!r} appears twice")
            seen.add(inv.property)
        return self

    def as_extracted(self) -> ConceptAnchor:
        """This anchor with every reviewer-only flag cleared (a model cannot set them)."""
        invs = [
            i.model_copy(update={"user_clarified": False, "auto_resolved": False})
            for i in self.invariants
        ]
        return self.model_copy(update={"invariants": invs})

    # -- queries ---------------------------------------------------------------------------
    def invariant(self, prop: str) -> Invariant:
        key = _snake(prop)
        for inv in self.invariants:
            if inv.property == key:
                return inv
        names = ", ".join(i.property for i in self.invariants)
        raise InputError(f"No invariant named {prop!r}; the anchor has: {names}.")

    def open_ambiguities(self) -> list[Invariant]:
        return [i for i in self.invariants if i.is_ambiguous]

    # -- reviewer changes (each returns a new anchor) --------------------------------------
    def clarify(self, prop: str, choice: str) -> ConceptAnchor:
        """Apply a reviewer's choice; ``choice`` is an option's text or its 1-based number."""
        return self.resolve(prop, choice, by_user=True)

    def resolve(self, prop: str, choice: str, *, by_user: bool) -> ConceptAnchor:
        """Apply ``choice`` (an option's text or number) to an ambiguous invariant."""
        inv = self.invariant(prop)
        if not inv.is_ambiguous:
            raise InputError(f"Invariant {inv.property!r} is not ambiguous; use edit to change it.")
        return self._replace(inv.property, inv.resolved(_pick_option(inv, choice), by_user=by_user))

    def auto_resolve(self) -> ConceptAnchor:
        """Resolve every open ambiguity with its first option (recorded as auto_resolved)."""
        anchor = self
        for inv in self.open_ambiguities():
            anchor = anchor._replace(
                inv.property, inv.resolved(inv.clarification_options[0], by_user=False)
            )
        return anchor

    def edit_value(self, prop: str, value: str) -> ConceptAnchor:
        inv = self.invariant(prop)
        if not value.strip():
            raise InputError("An invariant's value cannot be empty.")
        new = inv.model_copy(
            update={
                "value": value.strip(),
                "confidence": 1.0,
                "ambiguity": None,
                "clarification_options": [],
                "user_clarified": True,
            }
        )
        return self._replace(inv.property, new)

    def remove_non_goal(self, text: str) -> ConceptAnchor:
        goals = self.intent.non_goals
        matches = [g for g in goals if g.strip().lower() == text.strip().lower()]
        if not matches:
            raise InputError(f"No non-goal {text!r}; the anchor has: {goals}.")
        intent = self.intent.model_copy(update={"non_goals": [g for g in goals if g != matches[0]]})
        return self.model_copy(update={"intent": intent})

    def _replace(self, prop: str, new: Invariant) -> ConceptAnchor:
        invs = [new if i.property == prop else i for i in self.invariants]
        return self.model_copy(update={"invariants": invs})

    # -- rendering -------------------------------------------------------------------------
    def render(self) -> str:
        """The anchor as the text every stage receives verbatim (deterministic)."""
        lines = [
            "CONCEPT ANCHOR (immutable; honour every invariant or override it with a reason)",
            f"Goal: {self.intent.goal}",
        ]
        if self.intent.explicit_constraints:
            lines.append("Explicit constraints:")
            lines += [f"- {c}" for c in self.intent.explicit_constraints]
        if self.intent.non_goals:
            lines.append("Non-goals:")
            lines += [f"- {g}" for g in self.intent.non_goals]
        lines.append("Invariants:")
        for inv in self.invariants:
            tag = ""
            if inv.user_clarified:
                tag = " [clarified by founder]"
            elif inv.auto_resolved:
                tag = " [auto-resolved to the first option; not confirmed by the founder]"
            elif inv.is_ambiguous:
                tag = f" [AMBIGUOUS, {round(inv.confidence * 100)}% confident: {inv.ambiguity}]"
            lines.append(f'- {inv.property} = {inv.value} (source: "{inv.source}"){tag}')
        if self.identity:
            lines.append("Identity (do not genericize):")
            lines += [
                f"- {f.feature}" + (f" ({f.why_distinctive})" if f.why_distinctive else "")
                for f in self.identity
            ]
        return "\n".join(lines)

    def token_count(self) -> int:
        return estimate_tokens(self.render())


def _pick_option(inv: Invariant, choice: str) -> str:
    options = inv.clarification_options
    text = choice.strip()
    if text.isascii() and text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    for opt in options:
        if opt.strip().lower() == text.lower():
            return opt
    listed = "; ".join(f"{n}. {o}" for n, o in enumerate(options, 1))
    raise InputError(f"{choice!r} is not an option for {inv.property!r}. Options: {listed}.")
