"""Traceability references, repaired by code: every ``carries`` / ``honours_exclusion`` id.

A model writes ``"inv-01"``, ``"INV 1"``, ``"1"`` or the property name; after parsing, each
reference becomes the anchor's canonical id (``INV-1``); a part of a compound invariant
(``inv-3B``) becomes its part id (``INV-3b``), and a part reference to an invariant without
parts becomes the whole id. Duplicates are dropped and order kept.
Only a reference that names no invariant at all is a problem: it is left out of the item (so no
later check reads a dangling id) and earns the stage one re-ask naming the valid ids; if the
re-ask does not fix it, the problem stays on the stage for the reviewer at the gate.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput, Traceable

REF_FIELDS = ("carries", "honours_exclusion")


def _label(item: BaseModel) -> str:
    for key in ("id", "need", "name", "title"):
        value = getattr(item, key, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return type(item).__name__


def _walk(value: Any, anchor: ConceptAnchor, unknown: list[str]) -> Any:
    if isinstance(value, list):
        return [_walk(v, anchor, unknown) for v in value]
    if not isinstance(value, BaseModel):
        return value
    update: dict[str, Any] = {}
    for name in type(value).model_fields:
        child = getattr(value, name)
        if isinstance(value, Traceable) and name in REF_FIELDS:
            ids, bad = anchor.resolve_refs(child)
            unknown += [f"{_label(value)} {name} {ref!r}" for ref in bad]
            if ids != child:
                update[name] = ids
        elif isinstance(child, BaseModel | list):
            new = _walk(child, anchor, unknown)
            if new is not child and new != child:
                update[name] = new
    return value.model_copy(update=update) if update else value


def resolve_refs(
    output: StageOutput, anchor: ConceptAnchor | None
) -> tuple[StageOutput, list[str]]:
    """``output`` with every invariant reference spelled as the anchor's id, plus one problem
    sentence when some reference names no invariant (none without an anchor: nothing to check)."""
    if anchor is None:
        return output, []
    unknown: list[str] = []
    payload = _walk(output.payload, anchor, unknown)
    if payload is not output.payload:
        output = output.model_copy(update={"payload": payload})
    if not unknown:
        return output, []
    valid = ", ".join(
        f"{i.id} ({i.property}{'; parts ' + ', '.join(i.part_ids()) if i.parts else ''})"
        for i in anchor.invariants
    )
    return output, [
        f"unknown invariant references: {'; '.join(unknown[:8])}"
        f"{' …' if len(unknown) > 8 else ''}. Use only the anchor's ids: {valid}"
    ]
