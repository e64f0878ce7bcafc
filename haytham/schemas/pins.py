"""Pins wherever a trait family exists (issue 26, point 1).

An invariant whose kind maps to a trait family (:data:`haytham.schemas.traits.FAMILY_OF_KIND`:
access → auth, medium → communication, cadence, exchange → payments, deployment, interaction →
realtime) must pin a value of that family, because the checks guard an invariant structurally
only through its pin. When the extraction model leaves a pin out, the pipeline asks once
(:class:`TraitPins`, one structured call, agent :data:`PIN_AGENT`); what is still missing after
that becomes a Gate 1 question ("which of these does your idea mean?") whose options are the
family's values in plain words, each mapped to its trait ref in ``option_traits``, so the
founder's choice sets the pin. Everything here is pure: the runner makes the call.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.schemas.base import TolerantModel
from haytham.schemas.traits import VALUE_WORDS, near_value, parse_trait_ref

PIN_AGENT = "anchor-pins"
"""The agent name of the one extra call (cassettes record its answer under this name)."""
PIN_QUESTION_CONFIDENCE = 0.5
"""Confidence given to an invariant whose pin is still missing: Gate 1 asks the founder."""


class PinAnswer(TolerantModel):
    """The pin call's answer for one invariant: the family value the idea means (null when it
    does not say) and, for a clarification question, the value each option means."""

    invariant: str = Field(description="The invariant's id (INV-n).")
    value: str | None = Field(
        default=None,
        description="One value of the invariant's trait family, or null when the idea does not "
        "say which.",
    )
    options: dict[str, str] = Field(
        default_factory=dict,
        description="Only for an invariant that already has clarification options: each "
        "option's text -> the family value it means.",
    )

    @field_validator("options", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return {} if v is None else v


class TraitPins(TolerantModel):
    """The answer to the pin question: one entry per invariant asked about."""

    pins: list[PinAnswer] = Field(default_factory=list)


def unpinned(anchor: ConceptAnchor) -> list[Invariant]:
    """Invariants whose kind has a trait family but that pin no value of it."""
    return [i for i in anchor.invariants if i.needs_pin]


def pin_request(anchor: ConceptAnchor) -> str:
    """The user message of the pin call: each unpinned invariant with its family's values."""
    lines = [
        "These invariants of the concept anchor are about a system trait but pin no value of it.",
        "For each, answer the one value of its family that the founder's idea states or clearly",
        "implies (with `forbids`, the value it rules out), or null when the idea does not say.",
        "For an invariant with clarification options, map each option to the value it means.",
        "",
    ]
    for inv in unpinned(anchor):
        family = inv.family or ""
        values = "; ".join(f"`{v}` ({w})" for v, w in VALUE_WORDS[family].items())
        lines.append(
            f"- {inv.id} {inv.property} [{inv.kind}, {inv.polarity}] = {inv.value} "
            f'(source: "{inv.source}")'
        )
        if inv.clarification_options:
            lines.append(f"  options: {' | '.join(inv.clarification_options)}")
        lines.append(f"  family `{family}`: {values}")
    return "\n".join(lines)


def _value(family: str, raw: object) -> str | None:
    if raw is None:
        return None
    ref = parse_trait_ref(raw) if isinstance(raw, str) and "=" in raw else None
    if ref is not None:
        return ref[1] if ref[0] == family else None
    return near_value(family, raw) if isinstance(raw, str | bool) else None


def apply_pins(anchor: ConceptAnchor, answer: TraitPins | None) -> ConceptAnchor:
    """``anchor`` with the pins (and option mappings) the answer gives for unpinned invariants;
    answers about other invariants, and values outside the family, are ignored."""
    if answer is None:
        return anchor
    by_id = {inv.id: inv for inv in unpinned(anchor)}
    updates: dict[str, Invariant] = {}
    for pin in answer.pins:
        inv = anchor.resolve_ref(pin.invariant)
        if inv is None or inv.id not in by_id or inv.family is None:
            continue
        family = inv.family
        value = _value(family, pin.value)
        change: dict[str, object] = {}
        if value is not None and not inv.is_ambiguous:
            change["trait"] = f"{family}={value}"
        mapped = {
            opt: f"{family}={v}"
            for opt, raw in pin.options.items()
            if opt.strip() in inv.clarification_options and (v := _value(family, raw))
        }
        if mapped:
            change["option_traits"] = {**inv.option_traits, **mapped}
        if change:
            updates[inv.id] = inv.model_copy(update=change)
    return _with(anchor, updates)


def option_words(inv: Invariant) -> dict[str, str]:
    """The Gate 1 options for ``inv``'s family: plain words → trait ref (a ``forbids``
    invariant's options name what the product must never be)."""
    family = inv.family
    if family is None:
        return {}
    prefix = "Never: " if inv.polarity == "forbids" else ""
    return {f"{prefix}{w}": f"{family}={v}" for v, w in VALUE_WORDS[family].items()}


def ask_founder(anchor: ConceptAnchor) -> ConceptAnchor:
    """Every invariant still unpinned becomes a Gate 1 question, "which of these does your idea
    mean?", with its family's values as options (an invariant that is ambiguous already keeps
    its options; options the pin call mapped carry their pin)."""
    updates: dict[str, Invariant] = {}
    for inv in unpinned(anchor):
        if inv.is_ambiguous and inv.clarification_options:
            continue
        words = option_words(inv)
        updates[inv.id] = inv.model_copy(
            update={
                "confidence": min(inv.confidence, PIN_QUESTION_CONFIDENCE),
                "ambiguity": (
                    f"Which of these does your idea mean? “{inv.value}” does not say which "
                    f"{inv.family} it is, and later stages can only check what is pinned."
                ),
                "clarification_options": list(words),
                "option_traits": words,
            }
        )
    return _with(anchor, updates)


def _with(anchor: ConceptAnchor, updates: dict[str, Invariant]) -> ConceptAnchor:
    if not updates:
        return anchor
    invs = [updates.get(i.id, i) for i in anchor.invariants]
    return anchor.model_copy(update={"invariants": invs})


__all__ = [
    "PIN_AGENT",
    "PinAnswer",
    "TraitPins",
    "apply_pins",
    "ask_founder",
    "option_words",
    "pin_request",
    "unpinned",
]
