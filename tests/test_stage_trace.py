"""Code owns invariant ids and repairs references; only a reference to nothing is a problem."""

from __future__ import annotations

import json
from pathlib import Path

from haytham.schemas.anchor import ConceptAnchor
from haytham.stages import BY_SLUG, StageView
from haytham.validate import load_snapshot

BASE = Path(__file__).parent / "fixtures" / "drift" / "power_of_8"


def _anchor(**changes: object) -> ConceptAnchor:
    raw = json.loads((BASE / "concept_anchor.json").read_text())
    for inv in raw["invariants"]:
        inv.update(changes)
    return ConceptAnchor.model_validate(raw)


def test_ids_are_assigned_kept_and_repaired() -> None:
    fresh = _anchor(id=None)
    assert fresh.ids() == [f"INV-{n}" for n in range(1, 7)]
    raw = fresh.model_dump(mode="json")
    raw["invariants"][0]["id"] = "inv-07"  # a well-formed id in another spelling is kept
    raw["invariants"][1]["id"] = "INV-7"  # a duplicate is renumbered after the highest
    raw["invariants"][2]["id"] = "first"  # so is a malformed one
    assert ConceptAnchor.model_validate(raw).ids() == [
        "INV-7",
        "INV-8",
        "INV-9",
        "INV-4",
        "INV-5",
        "INV-6",
    ]


def test_near_miss_kind_polarity_and_trait_are_mapped() -> None:
    raw = _anchor().model_dump(mode="json")
    raw["invariants"][0].update(kind="Access model", polarity="must not", trait="Auth: Open")
    raw["invariants"][1].update(kind="timing", polarity=None, trait="colour=blue")
    anchor = ConceptAnchor.model_validate(raw)
    first, second = anchor.invariants[:2]
    assert (first.kind, first.polarity, first.trait) == (
        "access",
        "forbids",
        "auth=open_registration",
    )
    assert (second.kind, second.polarity, second.trait) == ("other", "requires", None)
    assert "- INV-1 access_model [access, forbids, auth=open_registration] = " in anchor.render()


def test_a_changed_value_drops_its_pinned_trait() -> None:
    anchor = _anchor(trait="realtime=true")
    same = anchor.edit_value("interaction_model", anchor.invariant("INV-4").value)
    assert same.invariant("INV-4").trait == "realtime=true"
    changed = anchor.edit_value("INV-4", "asynchronous: each gives when it suits them")
    assert changed.invariant("interaction_model").trait is None
    assert changed.ids() == anchor.ids()  # ids are stable through reviewer edits


def test_references_are_repaired_and_unknown_ones_earn_a_reask() -> None:
    snap = load_snapshot(BASE)
    spec = BY_SLUG["mvp-scope"]
    out = snap.outputs["mvp-scope"]
    items = out.payload.in_scope
    messy = [
        items[0].model_copy(update={"carries": ["inv-01", "INV 1", "access_model"]}),
        items[1].model_copy(update={"carries": ["2", "INV-3 orchestrator_role: runs it"]}),
        items[2].model_copy(update={"carries": ["INV-9", "group size"]}),
        *items[3:],
    ]
    out = out.model_copy(update={"payload": out.payload.model_copy(update={"in_scope": messy})})
    view = StageView(idea=snap.idea, outputs=snap.outputs, anchor=snap.anchor)
    fixed, problems = spec.complete(out, view)
    got = [i.carries for i in fixed.payload.in_scope[:3]]
    assert got == [["INV-1"], ["INV-2", "INV-3"], []]  # unknown ones are not kept as data
    (problem,) = problems
    assert "SCOPE-3 carries 'INV-9'" in problem and "'group size'" in problem
    assert "INV-1 (access_model)" in problem  # the valid ids, for the re-ask
    no_anchor = StageView(idea=snap.idea, outputs=snap.outputs, anchor=None)
    assert spec.complete(out, no_anchor)[1] == []


def test_the_anchor_prompt_lists_the_trait_vocabulary_code_checks() -> None:
    """One vocabulary: every trait value the checks compare is offered to the extractor."""
    from haytham.schemas.traits import TRAIT_VALUES

    prompt = (Path(__file__).parent.parent / "prompts" / "anchor_extraction.md").read_text()
    for trait, values in TRAIT_VALUES.items():
        line = next(ln for ln in prompt.splitlines() if ln.startswith(f"- `{trait}`:"))
        assert all(v in line for v in values), (trait, line)
