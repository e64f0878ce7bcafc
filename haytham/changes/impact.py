"""What a change to a stage's output does to the anchor's invariants, computed by code.

Used for every replacement of a stage's output: a change request (:mod:`haytham.changes.request`), a
rework or a re-run after an anchor edit (the runner's ``invariant_impact`` event, the gate
history). The items before and after are compared by id:

* **carriers** — the IN items whose ``carries`` name an invariant (a part id such as ``INV-3a``
  counts for ``INV-3``): added, removed, items moved IN↔OUT;
* **exclusions** — the OUT items whose ``honours_exclusion`` name it: added, removed;
* **pins** — an invariant that pins a trait (``auth=invite_only``): system-traits' value of that
  trait, and any item's ``assumes`` of that trait family, before and after.

An invariant is **broken** when the change takes away its last IN carrier (for a ``forbids``
invariant: its last carrier and its last honouring exclusion), puts an item that carries a
required invariant out of scope without honouring it, or makes the output contradict its pinned
trait where it did not before. That is code's finding, whatever the agent says; the agent's own
lists stay beside it as a second opinion (:class:`Impact`).

Cannot catch: an item that keeps its ``carries`` while its text stops describing the invariant
(the embedding and verifier checks look at words), or a pin stated only in prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from haytham.schemas.anchor import ConceptAnchor, Invariant
from haytham.schemas.envelope import StageOutput, Traceable
from haytham.schemas.revision import Impact, InvariantImpact
from haytham.schemas.traits import TRAIT_VALUES, near_trait, near_value
from haytham.stages import BY_SLUG, system_traits

TRAITS_STAGE = system_traits.SPEC.slug
_PART = re.compile(r"^(INV-\d+)[a-z]$", re.IGNORECASE)


@dataclass(frozen=True)
class _Item:
    id: str
    title: str
    out: bool
    carries: frozenset[str] = frozenset()
    honours: frozenset[str] = frozenset()
    assumes: tuple[tuple[str, str], ...] = ()


@dataclass
class _Side:
    items: dict[str, _Item] = field(default_factory=dict)
    traits: dict[str, str] = field(default_factory=dict)  # system-traits: trait -> value

    def carriers(self, inv: str) -> set[str]:
        return {i.id for i in self.items.values() if not i.out and inv in i.carries}

    def honouring(self, inv: str) -> set[str]:
        return {i.id for i in self.items.values() if i.out and inv in i.honours}

    def scoped_out(self, inv: str) -> set[str]:
        return {
            i.id for i in self.items.values() if i.out and inv in i.carries and inv not in i.honours
        }


def _ids(anchor: ConceptAnchor, refs: Iterable[Any]) -> frozenset[str]:
    """Canonical invariant ids for ``refs``; a part id (``INV-3a``) counts as its invariant."""
    wanted = []
    for ref in refs:
        text = str(ref).strip()
        part = _PART.match(text)
        wanted.append(part.group(1).upper() if part else text)
    return frozenset(anchor.resolve_refs(wanted)[0])


def _title(item: BaseModel) -> str:
    for key in ("title", "name", "need", "statement"):
        value = getattr(item, key, None)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return ""


def _assumes(item: BaseModel) -> tuple[tuple[str, str], ...]:
    raw = getattr(item, "assumes", None)
    if not isinstance(raw, dict):
        return ()
    out = []
    for family, value in raw.items():
        trait = near_trait(str(family))
        mapped = near_value(trait, value) if trait else None
        if trait and mapped:
            out.append((trait, mapped))
    return tuple(out)


def _side(slug: str, output: StageOutput | None, anchor: ConceptAnchor) -> _Side:
    side = _Side()
    if output is None or not isinstance(output.payload, BaseModel):
        return side
    spec = BY_SLUG.get(slug)
    out_fields = {name for name, out in (spec.items if spec else ()) if out}
    payload = output.payload
    for name in type(payload).model_fields:
        value = getattr(payload, name, None)
        if not isinstance(value, list):
            continue
        for n, item in enumerate(value):
            if not isinstance(item, Traceable):
                continue
            item_id = str(getattr(item, "id", "") or f"{name}[{n}]")
            side.items[item_id] = _Item(
                id=item_id,
                title=_title(item),
                out=name in out_fields,
                carries=_ids(anchor, item.carries),
                honours=_ids(anchor, getattr(item, "honours_exclusion", []) or []),
                assumes=_assumes(item),
            )
    value_of = getattr(payload, "value_of", None)
    if slug == TRAITS_STAGE and callable(value_of):
        for trait in TRAIT_VALUES:
            if hasattr(payload, trait):
                side.traits[trait] = value_of(trait)
    return side


def _contradicts(inv: Invariant, value: str | None) -> bool:
    ref = inv.trait_ref
    if ref is None or value is None:
        return False
    return value != ref[1] if inv.polarity == "requires" else value == ref[1]


def _named(side: _Side, ids: Iterable[str]) -> str:
    return ", ".join(
        f"{i} “{side.items[i].title}”" if side.items[i].title else i for i in sorted(ids)
    )


def _label(inv: Invariant) -> str:
    return f"{inv.id} ({inv.property})"


def _one(inv: Invariant, old: _Side, new: _Side) -> InvariantImpact | None:
    was, now = old.carriers(inv.id), new.carriers(inv.id)
    moved_out = {i for i in was if i in new.items and new.items[i].out}
    moved_in = {i for i in now if i in old.items and old.items[i].out}
    honoured_was, honoured_now = old.honouring(inv.id), new.honouring(inv.id)
    impact = InvariantImpact(
        invariant=inv.id,
        carriers_added=sorted(now - was - moved_in),
        carriers_removed=sorted(was - now - moved_out),
        moved_out=sorted(moved_out),
        moved_in=sorted(moved_in),
        honours_added=sorted(honoured_now - honoured_was),
        honours_removed=sorted(honoured_was - honoured_now),
    )
    notes: list[str] = []
    broken = False
    # -- carriers and exclusions
    kept_was = bool(was) or (inv.polarity == "forbids" and bool(honoured_was))
    kept_now = bool(now) or (inv.polarity == "forbids" and bool(honoured_now))
    if kept_was and not kept_now:
        broken = True
        gone = _named(old, was | (honoured_was if inv.polarity == "forbids" else set()))
        notes.append(
            f"{_label(inv)} loses its last item that delivers it ({gone}); no IN item "
            "carries it any more."
        )
    newly_out = new.scoped_out(inv.id) - old.scoped_out(inv.id)
    if inv.polarity == "requires" and newly_out:
        broken = True
        notes.append(
            f"{_named(new, newly_out)} puts {_label(inv)} out of scope without honouring it."
        )
    # -- pins: system-traits' value, items' assumptions
    ref = inv.trait_ref
    if ref is not None:
        trait = ref[0]
        before, after = old.traits.get(trait), new.traits.get(trait)
        if before != after and (before is not None or after is not None):
            impact.traits.append(f"{trait}: {before or '—'} → {after or '—'}")
        if _contradicts(inv, after) and not _contradicts(inv, before):
            broken = True
            rule = "requires" if inv.polarity == "requires" else "forbids"
            notes.append(
                f"System traits now set {trait} = {after}, which contradicts {_label(inv)}: it "
                f"{rule} {trait} = {ref[1]}."
            )
        for item in new.items.values():
            value = dict(item.assumes).get(trait)
            prior = old.items.get(item.id)
            prior_value = dict(prior.assumes).get(trait) if prior is not None else None
            if item.out or not _contradicts(inv, value) or _contradicts(inv, prior_value):
                continue
            broken = True
            notes.append(
                f"{_named(new, [item.id])} now assumes {trait} = {value}, which contradicts "
                f"{_label(inv)}."
            )
    # -- what else moved, in words
    if impact.carriers_added:
        notes.append(f"Now delivered also by {_named(new, impact.carriers_added)}.")
    if impact.carriers_removed and not broken:
        notes.append(
            f"No longer delivered by {_named(old, impact.carriers_removed)} "
            f"({len(now)} item(s) still deliver it)."
        )
    if impact.moved_out and not broken:
        notes.append(f"Moved out of scope: {_named(new, impact.moved_out)}.")
    if impact.moved_in:
        notes.append(f"Moved into scope: {_named(new, impact.moved_in)}.")
    if impact.honours_added:
        notes.append(f"Now honoured by the exclusion {_named(new, impact.honours_added)}.")
    if impact.honours_removed and not broken:
        notes.append(f"No longer honoured by the exclusion {_named(old, impact.honours_removed)}.")
    impact.broken = broken
    impact.notes = notes
    changed = (
        broken
        or impact.traits
        or any(
            (
                impact.carriers_added,
                impact.carriers_removed,
                impact.moved_out,
                impact.moved_in,
                impact.honours_added,
                impact.honours_removed,
            )
        )
    )
    return impact if changed else None


def compute_impact(
    slug: str,
    before: StageOutput | None,
    after: StageOutput | None,
    anchor: ConceptAnchor | None,
    *,
    agent_touched: Iterable[str] = (),
    agent_breaks: Iterable[str] = (),
) -> Impact:
    """The impact on ``anchor``'s invariants of replacing ``slug``'s output ``before`` with
    ``after``, with the agent's own lists (``agent_touched``, ``agent_breaks``, already resolved
    to ids) kept beside it. Without an anchor there is nothing to compare against."""
    impact = Impact(agent_touched=list(agent_touched), agent_breaks=list(agent_breaks))
    if anchor is None:
        return impact
    old, new = _side(slug, before, anchor), _side(slug, after, anchor)
    impact.invariants = [i for inv in anchor.invariants if (i := _one(inv, old, new))]
    return impact


def impact_lines(impact: Impact) -> list[str]:
    """The impact in plain sentences: each touched invariant's notes, broken ones first."""
    ordered = sorted(impact.invariants, key=lambda i: not i.broken)
    return [
        ("BROKEN: " if i.broken else "") + note
        for i in ordered
        for note in (i.notes or [f"{i.invariant} is touched."])
    ]
