"""The concept anchor (ADR-022 Part 1): a small, immutable statement of what the idea *is*.

Extracted once after idea-analysis, rendered to text and included verbatim — never truncated —
in every later stage's prompt. Only a reviewer changes it (Gate 1 clarification or edit).
"""

from __future__ import annotations

import builtins
import getpass
import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from haytham.errors import InputError
from haytham.schemas.base import TolerantModel
from haytham.schemas.traits import family_of, parse_trait_ref

AMBIGUITY_THRESHOLD = 0.7
LEAVE_OPEN = "Leave this open: my idea does not say"
ANCHOR_TOKEN_BUDGET = 500
REQUIRED_PROPERTIES = ("access_model", "interaction_model", "session_medium")
AUTO = "auto-approve"  # ``decided_by`` of a value picked by --auto-approve

InvariantKind = Literal[
    "access",
    "interaction",
    "medium",
    "cadence",
    "deployment",
    "exchange",
    "role",
    "structure",
    "data",
    "other",
]
"""What an invariant is about; checks pick invariants by kind, never by their property name."""
Provenance = Literal["founder", "reviewer", "auto", "open"]
"""Where an invariant's value came from: ``founder`` (extracted from the idea, quote in
``source``), ``reviewer`` (chosen or edited at Gate 1), ``auto`` (picked by ``--auto-approve``,
not confirmed by anyone) or ``open`` (the founder has not decided: there is no value)."""
Polarity = Literal["requires", "forbids"]
"""``requires``: the product must have/do the value. ``forbids``: it must never have/do it."""

_ID = re.compile(r"^[\s_\-#]*(?:inv[\s_\-#]*)?0*(\d+)\s*$", re.IGNORECASE)
_POLARITY_ALIASES = {
    "forbid": "forbids",
    "forbidden": "forbids",
    "must_not": "forbids",
    "never": "forbids",
    "excludes": "forbids",
    "exclude": "forbids",
    "prohibits": "forbids",
    "negative": "forbids",
    "require": "requires",
    "required": "requires",
    "must": "requires",
    "positive": "requires",
}


def estimate_tokens(text: str) -> int:
    """Token estimate used for budgets: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


class Intent(TolerantModel):
    """What the founder asked for: the goal, the constraints they stated and what they did not
    ask for (the anchor's first part)."""

    goal: str = Field(min_length=1, description="One sentence: the founder's actual ask.")
    explicit_constraints: list[str] = Field(
        default_factory=list, description="Things the founder stated or clearly implied."
    )
    non_goals: list[str] = Field(
        default_factory=list, description="Things the founder did NOT ask for (inferred)."
    )


def invariant_id(n: int) -> str:
    """The id of the ``n``-th invariant, as items reference it (``INV-3``)."""
    return f"INV-{n}"


PART_LETTERS = "abcdefghij"
_PART_REF = re.compile(r"^\s*(?:inv[\s_\-#]*)?0*(\d+)\s*[\-_.]?\s*([a-j])\s*$", re.IGNORECASE)


def part_id(inv_id: str, index: int) -> str:
    """The id of part ``index`` (0-based) of invariant ``inv_id``: ``INV-3``, 1 → ``INV-3b``."""
    return f"{inv_id}{PART_LETTERS[index]}"


def split_part_ref(ref: str) -> tuple[str, int] | None:
    """``"INV-3b"`` / ``"inv 3-b"`` → ("INV-3", 1); None when ``ref`` names no part."""
    m = _PART_REF.match(ref)
    if m is None:
        return None
    return invariant_id(int(m.group(1))), PART_LETTERS.index(m.group(2).lower())


class Invariant(TolerantModel):
    """A property every later stage must honour (or explicitly override with a reason).

    ``id`` is assigned by code (``INV-1``…, stable once given); later stages reference it in
    ``carries`` / ``honours_exclusion``. ``kind`` and ``polarity`` tell the checks what kind of
    promise it is; ``trait`` pins a system trait when the invariant fixes one.
    """

    id: SkipJsonSchema[str] = Field(default="", description="INV-n, assigned by code.")
    property: str = Field(min_length=1, description="snake_case name, e.g. access_model.")
    kind: InvariantKind = Field(default="other", description="What the invariant is about.")
    polarity: Polarity = Field(
        default="requires",
        description="requires: the product must have/do the value; forbids: it must never.",
    )
    value: str = Field(
        description="The required value or condition (never empty).",
        json_schema_extra={"minLength": 1},
    )
    trait: str | None = Field(
        default=None,
        description=(
            "Only when the invariant fixes a system trait: '<trait>=<value>' from the "
            "system-traits vocabulary, e.g. 'auth=invite_only', 'realtime=true', "
            "'deployment=air_gapped', 'payments=none', 'communication=video'."
        ),
    )
    source: str = Field(min_length=1, description="Exact quote or close paraphrase of the idea.")
    confidence: float = Field(
        ge=0.0, le=1.0, description="Extraction confidence; < 0.7 = ambiguous."
    )
    ambiguity: str | None = Field(default=None, description="If confidence < 0.7: what is unclear.")
    clarification_options: list[str] = Field(
        default_factory=list, description="If confidence < 0.7: 2-3 concrete choices."
    )
    parts: list[str] = Field(
        default_factory=list,
        description=(
            "Only when the value joins several separate conditions ('members only, approved by "
            "the committee'): each condition, in order; code numbers them INV-3a, INV-3b, ..."
        ),
    )
    option_traits: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "For each clarification option that fixes a system trait: option text -> "
            "'<trait>=<value>' (e.g. {'Live video calls': 'communication=video'})."
        ),
    )
    # Set by code only (a reviewer's choice, or --auto-approve); hidden from the model's schema.
    provenance: SkipJsonSchema[Provenance] = "founder"
    decided_by: SkipJsonSchema[str | None] = None  # who chose the value (reviewer, or "auto")
    decided_at: SkipJsonSchema[str | None] = None  # when (ISO 8601)
    # Older flags, kept in step with ``provenance`` (sessions from before it load through them).
    user_clarified: SkipJsonSchema[bool] = False
    auto_resolved: SkipJsonSchema[bool] = False
    # Set by code (haytham.validate.grounding): is ``source`` found in the idea? None: unchecked.
    grounded: SkipJsonSchema[bool | None] = None

    @model_validator(mode="before")
    @classmethod
    def _provenance_from_flags(cls, data: object) -> object:
        """A session from before ``provenance``: its flags say where the value came from, and
        "leave it open" chosen as a value becomes an open invariant with no value."""
        if not isinstance(data, dict) or data.get("provenance"):
            return data
        data = dict(data)
        if str(data.get("value", "")).strip() == LEAVE_OPEN:
            data |= {"provenance": "open", "value": ""}
        elif data.get("user_clarified"):
            data["provenance"] = "reviewer"
        elif data.get("auto_resolved"):
            data["provenance"] = "auto"
        return data

    @field_validator("property")
    @classmethod
    def _snake_case(cls, v: str) -> str:
        name = _snake(v)
        if not name:
            raise ValueError("property must contain letters or digits")
        return name

    @field_validator("clarification_options", "parts", mode="before")
    @classmethod
    def _none_is_empty(cls, v: object) -> object:
        return [] if v is None else v

    @field_validator("parts")
    @classmethod
    def _real_parts(cls, v: list[str]) -> list[str]:
        """Parts are distinct non-blank conditions; one part alone is no split (the whole)."""
        parts = _distinct(v)[: len(PART_LETTERS)]
        return parts if len(parts) >= 2 else []

    @field_validator("option_traits", mode="before")
    @classmethod
    def _trait_refs(cls, v: object) -> object:
        """Each option's trait ref in the vocabulary's spelling; unparseable refs are dropped."""
        if not isinstance(v, dict):
            return {}
        refs = {str(k).strip(): parse_trait_ref(t) for k, t in v.items()}
        return {k: f"{r[0]}={r[1]}" for k, r in refs.items() if r is not None and k}

    @field_validator("id", mode="before")
    @classmethod
    def _any_id(cls, v: object) -> object:
        """Code assigns ids: a missing or odd one is renumbered, never a reason to reject."""
        return v.strip() if isinstance(v, str) else str(v) if isinstance(v, int) else ""

    @field_validator("kind", mode="before")
    @classmethod
    def _near_kind(cls, v: object) -> object:
        """A near-miss kind ("Access model", "timing") maps to the closest kind, else other."""
        if not isinstance(v, str):
            return "other" if v is None else v
        key = _snake(v)
        kinds = get_args(InvariantKind)
        if key in kinds:
            return key
        return next((k for k in kinds if key.startswith(k) or k in key.split("_")), "other")

    @field_validator("polarity", mode="before")
    @classmethod
    def _near_polarity(cls, v: object) -> object:
        if not isinstance(v, str):
            return "requires" if v is None else v
        key = _snake(v)
        return key if key in ("requires", "forbids") else _POLARITY_ALIASES.get(key, "requires")

    @field_validator("trait", mode="before")
    @classmethod
    def _near_trait(cls, v: object) -> object:
        """``Auth: Invite-only`` → ``auth=invite_only``; anything outside the vocabulary → None."""
        ref = parse_trait_ref(v)
        return None if ref is None else f"{ref[0]}={ref[1]}"

    @field_validator("option_traits", mode="before")
    @classmethod
    def _option_traits_mapping(cls, v: object) -> object:
        """Anything but a mapping of text to text is nothing to keep (never a rejection)."""
        if not isinstance(v, dict):
            return {}
        return {str(k): str(t) for k, t in v.items() if isinstance(k, str) and isinstance(t, str)}

    @builtins.property
    def trait_ref(self) -> tuple[str, str] | None:
        """(trait, value) this invariant pins, or None."""
        return parse_trait_ref(self.trait)

    @builtins.property
    def family(self) -> str | None:
        """The trait family this invariant's kind is pinned in (access → auth), or None."""
        return family_of(self.kind)

    @builtins.property
    def needs_pin(self) -> bool:
        """Whether its kind has a trait family but no trait of that family is pinned."""
        ref = self.trait_ref
        return self.family is not None and (ref is None or ref[0] != self.family)

    def part_ids(self) -> list[str]:
        """``INV-3a``, ``INV-3b``, ... for its parts (none when it has no parts)."""
        return [part_id(self.id, n) for n in range(len(self.parts))]

    def part_texts(self) -> dict[str, str]:
        """part id → the condition it names."""
        return dict(zip(self.part_ids(), self.parts, strict=True))

    @field_validator("clarification_options")
    @classmethod
    def _no_blank_options(cls, v: list[str]) -> list[str]:
        return [o.strip() for o in v if o.strip()]

    @model_validator(mode="after")
    def _value_unless_open(self) -> Invariant:
        """Only an open invariant has no value; the flags follow ``provenance``."""
        if self.provenance == "open":
            self.value = ""
            self.trait = None
        elif not self.value.strip():
            raise ValueError("value must not be empty")
        self.user_clarified = self.provenance == "reviewer" or (
            self.provenance == "open" and self.decided_by not in (None, AUTO)
        )
        self.auto_resolved = self.provenance == "auto"
        return self

    @model_validator(mode="after")
    def _ambiguity_has_options(self) -> Invariant:
        """Below 0.7 the founder is asked, so code makes sure there is something to ask.

        A missing explanation gets a plain one; the options are de-duplicated and made 2-3: the
        extracted value and "leave it open" fill in for missing ones, extra ones are dropped.
        A weak model's incomplete ambiguity is repaired here, never a reason to reject it.
        Each option's pin is kept when it names an option and a trait; the option equal to the
        value carries the invariant's own pin.
        """
        if not self.is_ambiguous:
            self.option_traits = self._pins(self.clarification_options)
            return self
        if not (self.ambiguity or "").strip():
            self.ambiguity = (
                f"The extractor is only {round(self.confidence * 100)}% sure of this value."
            )
        keep = max(3, sum(1 for o in self.clarification_options if o in self.option_traits))
        options = _distinct(self.clarification_options)[:keep]
        if len(options) < 2:
            options = _distinct([*options, self.value, LEAVE_OPEN])[:2]
        self.clarification_options = options
        self.option_traits = self._pins(options)
        return self

    def _pins(self, options: list[str]) -> dict[str, str]:
        """``option_traits`` normalised: keyed by the option's own text, each a valid trait ref;
        the option that equals the value gets the invariant's pin when it has none."""
        by_text = {o.strip().lower(): o for o in options}
        pins: dict[str, str] = {}
        for text, ref in self.option_traits.items():
            option = by_text.get(text.strip().lower())
            parsed = parse_trait_ref(ref)
            if option is not None and option != LEAVE_OPEN and parsed is not None:
                pins[option] = f"{parsed[0]}={parsed[1]}"
        current = by_text.get(self.value.strip().lower())
        if current is not None and self.trait and current not in pins:
            pins[current] = self.trait
        return pins

    def choices(self) -> list[str]:
        """What a person may answer: the options, then "leave it open" (always offered)."""
        options = list(self.clarification_options)
        return options if LEAVE_OPEN in options else [*options, LEAVE_OPEN]

    @builtins.property  # the field named ``property`` shadows the builtin in this class body
    def is_ambiguous(self) -> bool:
        """Still waiting for a person: the extractor was unsure and nobody has decided."""
        return self.provenance == "founder" and self.confidence < AMBIGUITY_THRESHOLD

    @builtins.property
    def is_open(self) -> bool:
        """The founder has not decided this: there is no value to honour or check against."""
        return self.provenance == "open"

    def shown_value(self) -> str:
        """The value as a person reads it: ``open (not decided)`` for an open invariant."""
        return "open (not decided)" if self.is_open else self.value

    def resolved(self, choice: str, *, by_user: bool, who: str | None = None) -> Invariant:
        """This invariant with ``choice`` applied as in ADR-022 1c.

        The chosen option keeps its own pin (``option_traits``); "leave it open" gives an open
        invariant with no value. A reviewer's choice is certain (confidence 1.0); an automatic
        one keeps the extractor's confidence, since nobody confirmed it.
        """
        open_ = choice.strip() == LEAVE_OPEN
        pin = self.option_traits.get(choice)
        if pin is None and choice.strip() == self.value.strip():
            pin = self.trait
        provenance: Provenance = "open" if open_ else "reviewer" if by_user else "auto"
        return Invariant(
            id=self.id,
            property=self.property,
            kind=self.kind,
            polarity=self.polarity,
            trait=None if open_ else pin,
            value="" if open_ else choice,
            parts=[] if open_ or choice.strip() != self.value.strip() else self.parts,
            source=self.source,
            confidence=1.0 if by_user and not open_ else self.confidence,
            ambiguity=None,
            clarification_options=[],
            provenance=provenance,
            decided_by=(who or reviewer_name()) if by_user else AUTO,
            decided_at=now_iso(),
            grounded=self.grounded,
        )


class IdentityFeature(TolerantModel):
    """A distinctive element of the idea that a model tends to genericise, quoted from the idea
    (``grounded`` is False when code did not find the quote there)."""

    feature: str = Field(min_length=1, description="The distinctive element of the idea.")
    why_distinctive: str = Field(default="", description="Why an LLM is likely to genericize it.")
    source: str = Field(default="", description="Exact quote of the idea that shows it.")
    grounded: SkipJsonSchema[bool | None] = None  # set by code, as for invariants


class ConceptAnchor(TolerantModel):
    """intent + invariants + identity, per ADR-022 Part 1."""

    intent: Intent
    invariants: list[Invariant] = Field(min_length=1)
    identity: list[IdentityFeature] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_properties(self) -> ConceptAnchor:
        """A repeated invariant is code's to fix: an exact repeat (same name and value) is
        dropped, a repeated name with another value gets a numbered name (``access_model_2``)."""
        pairs: set[tuple[str, str]] = set()
        names: set[str] = set()
        kept: list[Invariant] = []
        for inv in self.invariants:
            if (inv.property, inv.value) in pairs:
                continue
            pairs.add((inv.property, inv.value))
            if inv.property in names:
                n = 2
                while f"{inv.property}_{n}" in names:
                    n += 1
                inv.property = f"{inv.property}_{n}"
            names.add(inv.property)
            kept.append(inv)
        self.invariants = kept
        return self

    @model_validator(mode="after")
    def _assign_ids(self) -> ConceptAnchor:
        """Keep every well-formed unique ``INV-n``; number the rest after the highest one."""
        taken: set[str] = set()
        keep: list[bool] = []
        for inv in self.invariants:
            m = _ID.match(inv.id) if inv.id else None
            canonical = invariant_id(int(m.group(1))) if m else ""
            ok = bool(canonical) and canonical not in taken
            if ok:
                taken.add(canonical)
                inv.id = canonical
            keep.append(ok)
        n = max((int(i[4:]) for i in taken), default=0)
        for inv, ok in zip(self.invariants, keep, strict=True):
            if not ok:
                n += 1
                inv.id = invariant_id(n)
                taken.add(inv.id)
        return self

    def as_extracted(self) -> ConceptAnchor:
        """This anchor with every reviewer-only field cleared (a model cannot set them)."""
        cleared = {
            "user_clarified": False,
            "auto_resolved": False,
            "provenance": "founder",
            "decided_by": None,
            "decided_at": None,
        }
        invs = [i.model_copy(update=cleared) for i in self.invariants]
        return self.model_copy(update={"invariants": invs})

    def digest(self) -> str:
        """A fingerprint of what the anchor asks of later stages (not of confidences or flags).

        Stages record the digest of the anchor they ran with; when a reviewer's clarification or
        edit changes a value, their digest no longer matches and they are stale.
        """
        content = {
            "intent": self.intent.model_dump(mode="json"),
            "invariants": [
                [i.id, i.property, i.kind, i.polarity, i.value, i.trait]
                + ([i.parts] if i.parts else [])
                for i in self.invariants
            ],
            "identity": [f.feature for f in self.identity],
        }
        blob = json.dumps(content, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    # -- queries ---------------------------------------------------------------------------
    def invariant(self, prop: str) -> Invariant:
        """The invariant named ``prop`` (property name or id)."""
        found = self.resolve_ref(prop)
        if found is not None:
            return found
        names = ", ".join(f"{i.id} {i.property}" for i in self.invariants)
        raise InputError(f"No invariant named {prop!r}; the anchor has: {names}.")

    def resolve_ref(self, ref: object) -> Invariant | None:
        """The invariant a model meant by ``ref``: an id in any spelling ("inv-01", "INV 1",
        "1"), the property name, or "INV-1 access_model" / "access_model: closed"; else None."""
        if not isinstance(ref, str | int) or isinstance(ref, bool):
            return None
        text = str(ref).strip()
        exact = next((i for i in self.invariants if i.property == _snake(text)), None)
        if exact is not None:
            return exact
        m = _ID.match(text) or re.match(r"\s*inv[\s_\-#]*0*(\d+)\b", text, re.IGNORECASE)
        if m is not None:
            want = invariant_id(int(m.group(1)))
            return next((i for i in self.invariants if i.id == want), None)
        key = _snake(re.split(r"[:=(\u2014\u2013]| - ", text, maxsplit=1)[0])
        return next((i for i in self.invariants if i.property == key), None)

    def resolve_part(self, ref: object) -> str | None:
        """The part id ``ref`` names (``"inv-3B"`` → ``INV-3b``) when that invariant has that
        part; the whole invariant's id when it has no parts (a near-miss); else None."""
        if not isinstance(ref, str):
            return None
        split = split_part_ref(ref)
        if split is None:
            return None
        inv = next((i for i in self.invariants if i.id == split[0]), None)
        if inv is None:
            return None
        if not inv.parts:
            return inv.id
        return part_id(inv.id, split[1]) if split[1] < len(inv.parts) else None

    def resolve_refs(self, refs: list[str]) -> tuple[list[str], list[str]]:
        """(the anchor ids ``refs`` name, in order and once each; the refs that name nothing).

        A part reference (``INV-3a``) stays a part id when the invariant has that part."""
        ids: list[str] = []
        unknown: list[str] = []
        for ref in refs:
            part = self.resolve_part(ref)
            inv = self.resolve_ref(ref) if part is None else None
            found = part if part is not None else (inv.id if inv is not None else None)
            if found is None:
                unknown.append(ref)
            elif found not in ids:
                ids.append(found)
        return ids, unknown

    def ids(self) -> list[str]:
        """The invariants' ids (``INV-n``), in order; part ids aside (see :meth:`ref_ids`)."""
        return [i.id for i in self.invariants]

    def ref_ids(self) -> list[str]:
        """Every id an item may carry: each invariant's id and its part ids."""
        return [x for i in self.invariants for x in (i.id, *i.part_ids())]

    def open_ambiguities(self) -> list[Invariant]:
        """Invariants still waiting for a person to clarify them (they hold Gate 1)."""
        return [i for i in self.invariants if i.is_ambiguous]

    def open_invariants(self) -> list[Invariant]:
        """Invariants the founder left open (no value): open questions, not promises."""
        return [i for i in self.invariants if i.is_open]

    def decided(self) -> list[Invariant]:
        """Invariants with a value to honour (every one but the open ones)."""
        return [i for i in self.invariants if not i.is_open]

    # -- reviewer changes (each returns a new anchor) --------------------------------------
    def clarify(self, prop: str, choice: str, who: str | None = None) -> ConceptAnchor:
        """Apply a reviewer's choice; ``choice`` is an option's text or its 1-based number."""
        return self.resolve(prop, choice, by_user=True, who=who)

    def resolve(
        self, prop: str, choice: str, *, by_user: bool, who: str | None = None
    ) -> ConceptAnchor:
        """Apply ``choice`` (an option's text or number) to an ambiguous invariant."""
        inv = self.invariant(prop)
        if not inv.is_ambiguous:
            raise InputError(f"Invariant {inv.property!r} is not ambiguous; use edit to change it.")
        chosen = inv.resolved(_pick_option(inv, choice), by_user=by_user, who=who)
        return self._replace(inv.property, chosen)

    def auto_resolve(self) -> ConceptAnchor:
        """Resolve every open ambiguity with its first option (recorded as auto_resolved)."""
        anchor = self
        for inv in self.open_ambiguities():
            anchor = anchor._replace(
                inv.property, inv.resolved(inv.clarification_options[0], by_user=False)
            )
        return anchor

    def edit_value(self, prop: str, value: str, who: str | None = None) -> ConceptAnchor:
        """A reviewer's new value (or, with ``LEAVE_OPEN``, leaves the invariant open)."""
        inv = self.invariant(prop)
        if not value.strip():
            raise InputError("An invariant's value cannot be empty.")
        open_ = value.strip() == LEAVE_OPEN
        pin = next(
            (t for o, t in inv.option_traits.items() if o.strip().lower() == value.strip().lower()),
            None,
        )
        new = Invariant.model_validate(
            inv.model_dump()
            | {
                # a pinned trait belonged to the old value; code cannot know the new one's
                "trait": None
                if open_
                else pin or (inv.trait if value.strip() == inv.value.strip() else None),
                "value": "" if open_ else value.strip(),
                "confidence": inv.confidence if open_ else 1.0,
                "parts": inv.parts if not open_ and value.strip() == inv.value.strip() else [],
                "ambiguity": None,
                "clarification_options": [],
                "option_traits": {},
                "provenance": "open" if open_ else "reviewer",
                "decided_by": who or reviewer_name(),
                "decided_at": now_iso(),
            }
        )
        return self._replace(inv.property, new)

    def remove_non_goal(self, text: str) -> ConceptAnchor:
        """A copy without the non-goal ``text`` (matched ignoring case and outer spaces).

        Raises:
            InputError: no non-goal matches; the message lists them.
        """
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
            if inv.is_open:
                lines.append(
                    f"- {inv.id} {inv.property} = OPEN: the founder has not decided this; do not "
                    f'assume any value, keep the choice open (source: "{inv.source}")'
                )
                continue
            tag = ""
            if inv.provenance == "reviewer":
                tag = " [clarified by founder]"
            elif inv.provenance == "auto":
                tag = " [auto-resolved to the first option; not confirmed by the founder]"
            elif inv.is_ambiguous:
                tag = f" [AMBIGUOUS, {round(inv.confidence * 100)}% confident: {inv.ambiguity}]"
            marks = [
                m
                for m in (inv.kind, inv.polarity, inv.trait)
                if m not in ("other", "requires", None)
            ]
            mark = f" [{', '.join(marks)}]" if marks else ""
            lines.append(
                f'- {inv.id} {inv.property}{mark} = {inv.value} (source: "{inv.source}"){tag}'
            )
            lines += [f"  - {pid}: {text}" for pid, text in inv.part_texts().items()]
        if self.identity:
            lines.append("Identity (do not genericize):")
            lines += [
                f"- {f.feature}"
                + (f" ({f.why_distinctive})" if f.why_distinctive else "")
                + (" [not found in the idea]" if f.grounded is False else "")
                for f in self.identity
            ]
        return "\n".join(lines)

    def token_count(self) -> int:
        """Roughly how many tokens the rendered anchor takes in a prompt (4 characters each)."""
        return estimate_tokens(self.render())


def reviewer_name() -> str:
    """Who is deciding at a gate: the local user's name until sign-in exists."""
    try:
        return getpass.getuser() or "reviewer"
    except Exception:  # no user name in this environment (a container without a passwd entry)
        return "reviewer"


def now_iso() -> str:
    """Now, in UTC, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _distinct(options: list[str]) -> list[str]:
    """Non-blank options, stripped, each once (case-insensitively), in order."""
    seen: set[str] = set()
    out: list[str] = []
    for option in (o.strip() for o in options):
        if option and option.lower() not in seen:
            seen.add(option.lower())
            out.append(option)
    return out


def _pick_option(inv: Invariant, choice: str) -> str:
    options = inv.choices()
    text = choice.strip()
    if text.isascii() and text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    for opt in options:
        if opt.strip().lower() == text.lower():
            return opt
    listed = "; ".join(f"{n}. {o}" for n, o in enumerate(options, 1))
    raise InputError(f"{choice!r} is not an option for {inv.property!r}. Options: {listed}.")
