"""Plumbing shared by the validators: run context, finding helper, anchor-invariant kinds, texts."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from haytham.schemas.anchor import ConceptAnchor, Invariant, split_part_ref
from haytham.schemas.envelope import InvariantOverride, StageOutput
from haytham.schemas.traits import EXCLUSIONS
from haytham.stages import BY_SLUG, STAGES
from haytham.validate.model import Finding, Snapshot, ValidatorSettings
from haytham.validate.text import snake

if TYPE_CHECKING:
    from haytham.validate.embeddings import Encoder

STAGE_NUMBER: Mapping[str, int] = MappingProxyType({s.slug: s.number for s in STAGES})
WHAT_HOW_STORIES: tuple[str, ...] = tuple(s.slug for s in STAGES if s.number >= 5)
DESCRIPTIVE: tuple[str, ...] = tuple(s.slug for s in STAGES if s.descriptive)
"""Stages that describe the whole product at their level; each must evidence every invariant."""

COMPUTED_KEYS = (
    "order",
    "cycles",
    "coverage",
    "constraints",
    "risk_level",
    "verdict",
    "verdict_reason",
    "appetite",
)


@dataclass(frozen=True)
class Context:
    """One validation run: settings, the stage filter and the (optional) embedder."""

    snap: Snapshot
    settings: ValidatorSettings
    stages: frozenset[str] | None = None
    embedder: Encoder | None = None

    def wants(self, slug: str | None) -> bool:
        """Whether findings about ``slug`` are wanted in this run."""
        if self.stages is None:
            return True
        return slug is not None and slug in self.stages

    def output(self, slug: str) -> StageOutput | None:
        """The stage's output envelope in the snapshot, or ``None`` if it has not run."""
        return self.snap.outputs.get(slug)

    def payload(self, slug: str) -> Any:
        """The stage's typed payload (its stage-specific model), or ``None`` if it has not run."""
        out = self.snap.outputs.get(slug)
        return None if out is None else out.payload


def finding(
    validator: str,
    stage: str | None,
    message: str,
    *,
    invariant: Invariant | str | None = None,
    item: str | None = None,
    evidence: str = "",
    info: bool = False,
) -> Finding:
    """A warning (or, with ``info``, a second opinion); the runner raises warnings to blocking
    when the settings say so."""
    if isinstance(invariant, Invariant):
        invariant = f"{invariant.id} {invariant.property}"
    return Finding(
        validator=validator,
        severity="info" if info else "warning",
        stage=stage,
        invariant=invariant,
        item=item,
        message=message,
        evidence=evidence,
    )


# -- anchor invariants -------------------------------------------------------------------------
def resolved(inv: Invariant) -> bool:
    """Unresolved ambiguous invariants (confidence < 0.7, nobody decided) and open ones (the
    founder has not decided: no value) drive no constraints."""
    return not inv.is_ambiguous and not inv.is_open


def value_terms(inv: Invariant) -> tuple[list[str], list[str]]:
    """(key terms the value affirms, key terms it rules out): "pickup only, no delivery" →
    (["pickup"], ["delivery"])."""
    from haytham.validate.lexicon import key_terms
    from haytham.validate.negation import affirmed_terms

    affirmed = affirmed_terms(inv.value)
    keys = key_terms(inv.value)
    return [t for t in keys if t in affirmed], [t for t in keys if t not in affirmed]


def is_exclusion(inv: Invariant) -> bool:
    """A ``forbids`` invariant, or one pinned to a trait's ``none`` (``payments=none``):
    it rules something out, so no item can "deliver" it."""
    return inv.polarity == "forbids" or inv.trait_ref in EXCLUSIONS


def anchor_invariants(anchor: ConceptAnchor | None) -> list[Invariant]:
    """The anchor's invariants, every one (ambiguous and open included); none without an anchor."""
    return list(anchor.invariants) if anchor is not None else []


def compliance_names(items: list[str]) -> set[str]:
    """Normalised invariant names from an ``anchor_compliance`` list (tolerates "name: note")."""
    out = set()
    for item in items:
        head = re.split(r"[:=(\u2014\u2013]| - ", item, maxsplit=1)[0]
        out.add(snake(head))
    return out


def names_invariant(ctx: Context, ref: str, inv: Invariant) -> bool:
    """Whether an ``anchor_compliance`` entry ("INV-2", "group_structure: kept") names ``inv``."""
    anchor = ctx.snap.anchor
    named = anchor.resolve_ref(ref) if anchor is not None else None
    if named is not None:
        return named.id == inv.id
    return mentions_invariant(compliance_names([ref]), inv.property)


def override_for(ctx: Context, out: StageOutput, inv: Invariant) -> InvariantOverride | None:
    """The stage's override of ``inv`` (named by id or property), if any."""
    overrides = out.anchor_compliance.invariants_overridden
    return next((o for o in overrides if names_invariant(ctx, o.invariant, inv)), None)


def mentions_invariant(names: set[str], prop: str) -> bool:
    """Whether a normalised name equals the property ``prop`` or one extends the other by a
    ``_suffix`` (``group_structure`` and ``group_structure_kept`` name the same invariant)."""
    return any(
        n == prop or n.startswith(prop + "_") or prop.startswith(n + "_") and n for n in names
    )


def payload_items(payload: Any, key: str) -> Iterator[Any]:
    """The entries of the payload's list field ``key`` (none when it is missing or empty)."""
    yield from getattr(payload, key, []) or []


@dataclass(frozen=True)
class Item:
    """One traceable item of a descriptive stage, as the coverage checks see it."""

    id: str
    text: str
    carries: tuple[str, ...]
    honours: tuple[str, ...] = ()
    out: bool = False  # an mvp-scope OUT-of-scope item
    assumes: tuple[tuple[str, str], ...] = ()  # (family, value) the item declares it assumes

    @property
    def carried(self) -> tuple[str, ...]:
        """The invariant ids it carries, a part id (``INV-3a``) counting for its invariant."""
        return tuple(dict.fromkeys(whole_id(c) for c in self.carries))

    @property
    def honoured(self) -> tuple[str, ...]:
        """The invariant ids whose exclusion it honours, part ids counting for their invariant."""
        return tuple(dict.fromkeys(whole_id(c) for c in self.honours))


def whole_id(ref: str) -> str:
    """``INV-3b`` → ``INV-3``; any other reference unchanged."""
    split = split_part_ref(ref) if ref.upper().startswith("INV") else None
    return split[0] if split is not None else ref


def _item_text(item: Any) -> str:
    parts = [getattr(item, k, "") for k in ("title", "name", "description", "user_flow")]
    parts += list(getattr(item, "acceptance_criteria", []) or [])
    return ". ".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


def stage_items(ctx: Context, slug: str) -> list[Item]:
    """The IN and OUT items of a descriptive stage, with their references resolved to ids."""
    payload, anchor = ctx.payload(slug), ctx.snap.anchor
    out: list[Item] = []
    for key, is_out in BY_SLUG[slug].items if slug in BY_SLUG else ():
        for it in payload_items(payload, key):
            out.append(
                Item(
                    id=str(getattr(it, "id", "")),
                    text=_item_text(it),
                    carries=resolve_ids(anchor, getattr(it, "carries", [])),
                    honours=resolve_ids(anchor, getattr(it, "honours_exclusion", [])),
                    out=is_out,
                    assumes=tuple(sorted((getattr(it, "assumes", None) or {}).items())),
                )
            )
    return out


def traced(items: list[Item]) -> bool:
    """Whether the stage uses traceability at all (a model may ignore the optional fields)."""
    return any(i.carries or i.honours for i in items)


def resolve_ids(anchor: ConceptAnchor | None, refs: Any) -> tuple[str, ...]:
    """Canonical invariant ids for ``refs``; an unresolvable reference is kept as written (so the
    coverage check can report it)."""
    refs = [str(r) for r in refs or []]
    if anchor is None:
        return tuple(dict.fromkeys(refs))
    ids, unknown = anchor.resolve_refs(refs)
    return tuple(dict.fromkeys(ids + unknown))


NEGATIVE_SPLIT = re.compile(
    # (?<!\s): a match starts where a whitespace run starts, so a long run is scanned once
    r",?(?<!\s)\s+(?:not|rather than|instead of|as opposed to|vs\.?|versus)\s+",
    re.IGNORECASE,
)


def feature_parts(feature: str) -> tuple[str, str]:
    """An identity feature "X, not Y" as (X, Y); Y is '' when the feature names no alternative."""
    parts = NEGATIVE_SPLIT.split(feature, maxsplit=1)
    positive = parts[0].strip() or feature
    return positive, (parts[1].strip() if len(parts) > 1 else "")
