"""Invariant impact computed by code (haytham.changes.impact): carriers lost or gained, items moved in
or out of scope, exclusions, pinned traits, on the Power of 8 session's recorded answers."""

from __future__ import annotations

import copy
import json
from typing import Any

from pipeline_helpers import POWER8

from haytham.changes.impact import compute_impact, impact_lines
from haytham.schemas.anchor import ConceptAnchor
from haytham.stages import BY_SLUG


def _answer(agent: str) -> dict[str, Any]:
    for line in (POWER8 / "pipeline.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["agent"] == agent:
            return copy.deepcopy(entry["response"][-1]["input"])
    raise AssertionError(agent)


ANCHOR = ConceptAnchor.model_validate(_answer("anchor-extraction"))


def _output(slug: str, edit=None):
    answer = _answer(slug)
    if edit is not None:
        edit(answer["payload"])
    return BY_SLUG[slug].output_model.model_validate(answer)


def test_the_anchor_has_the_ids_the_tests_name() -> None:
    assert [(i.id, i.property) for i in ANCHOR.invariants][:2] == [
        ("INV-1", "access_model"),
        ("INV-2", "group_structure"),
    ]


def test_an_unchanged_output_touches_nothing() -> None:
    scope = _output("mvp-scope")
    impact = compute_impact("mvp-scope", scope, scope, ANCHOR)
    assert impact.invariants == [] and impact.broken == [] and impact_lines(impact) == []


def test_moving_the_only_carrier_out_of_scope_breaks_the_invariant() -> None:
    def move(payload: dict) -> None:
        first = payload["in_scope"].pop(0)  # SCOPE-1, the only carrier of INV-1
        payload["out_of_scope"].append(first)

    impact = compute_impact("mvp-scope", _output("mvp-scope"), _output("mvp-scope", move), ANCHOR)
    assert impact.broken == ["INV-1"]
    (inv,) = impact.invariants
    assert inv.moved_out == ["SCOPE-1"] and inv.carriers_removed == []
    lines = impact_lines(impact)
    assert any("loses its last item" in x for x in lines)
    assert any("puts INV-1 (access_model) out of scope" in x for x in lines)


def test_a_part_id_counts_as_its_invariant_and_a_second_carrier_keeps_it() -> None:
    def part(payload: dict) -> None:
        payload["in_scope"][1]["carries"] = ["INV-2a"]  # SCOPE-2: INV-3 dropped, INV-2 as a part

    impact = compute_impact("mvp-scope", _output("mvp-scope"), _output("mvp-scope", part), ANCHOR)
    assert impact.broken == []  # INV-3 is still carried by SCOPE-3 and SCOPE-6
    assert impact.touched == ["INV-3"]
    assert impact.invariants[0].carriers_removed == ["SCOPE-2"]


def test_dropping_an_exclusion_is_touched_not_broken_for_a_required_invariant() -> None:
    def unhonour(payload: dict) -> None:
        payload["out_of_scope"][0]["honours_exclusion"] = []

    impact = compute_impact(
        "mvp-scope", _output("mvp-scope"), _output("mvp-scope", unhonour), ANCHOR
    )
    (inv,) = impact.invariants
    assert (inv.invariant, inv.honours_removed, inv.broken) == ("INV-1", ["SCOPE-7"], False)


def test_a_system_trait_that_contradicts_a_pin_breaks_it() -> None:
    def open_up(payload: dict) -> None:
        payload["auth"]["value"] = "open_registration"
        payload["realtime"]["value"] = False

    impact = compute_impact(
        "system-traits", _output("system-traits"), _output("system-traits", open_up), ANCHOR
    )
    assert impact.broken == ["INV-1", "INV-4"]
    assert impact.invariants[0].traits == ["auth: invite_only → open_registration"]
    assert any(
        "auth = open_registration, which contradicts INV-1" in x for x in impact_lines(impact)
    )


def test_an_item_assuming_a_contradicting_trait_breaks_the_pin() -> None:
    def assume(payload: dict) -> None:
        payload["functional"][0]["assumes"] = {"auth": "open registration"}

    before = _output("capability-model")
    after = _output("capability-model", assume)
    if not hasattr(after.payload.functional[0], "assumes"):
        # the field lands with issue 26's drift checks; the impact reads it when there
        after.payload.functional[0].__dict__["assumes"] = {"auth": "open registration"}
    impact = compute_impact("capability-model", before, after, ANCHOR)
    assert "INV-1" in impact.broken


def test_agent_and_code_disagreements_are_named() -> None:
    def drop(payload: dict) -> None:
        payload["in_scope"] = [i for i in payload["in_scope"] if i["id"] != "SCOPE-1"]

    impact = compute_impact(
        "mvp-scope",
        _output("mvp-scope"),
        _output("mvp-scope", drop),
        ANCHOR,
        agent_touched=["INV-5"],
        agent_breaks=["INV-2"],
    )
    said = impact.disagreements()
    assert impact.refused_for == ["INV-1", "INV-2"]
    assert any(s.startswith("INV-1 is broken by this change") for s in said)
    assert any(s.startswith("The agent says INV-2 breaks") for s in said)
    assert any("agent lists INV-5 as touched" in s for s in said)


def test_no_anchor_no_impact() -> None:
    scope = _output("mvp-scope")
    assert compute_impact("mvp-scope", None, scope, None).invariants == []
