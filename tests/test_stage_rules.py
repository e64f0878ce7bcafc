"""Deterministic stage code: verdict rule, risk level, story order, anchor rules, key matching."""

from __future__ import annotations

import pytest

from haytham.errors import ContractViolation, InputError
from haytham.schemas.anchor import LEAVE_OPEN, ConceptAnchor, Invariant
from haytham.schemas.base import parse_contract
from haytham.stages import StageView
from haytham.stages.risk_assessment import AssessedClaim, Risk, risk_level
from haytham.stages.story_generation import Story, dependency_order
from haytham.stages.validation_summary import (
    Dimension,
    Knockout,
    ValidationSummaryOutput,
    finalize,
    verdict,
)


def dims(*scores):
    return [Dimension(name=f"d{i}", score=s) for i, s in enumerate(scores)]


@pytest.mark.parametrize(
    ("knock", "scores", "risk", "expected"),
    [
        (True, (5, 5), "low", "GO"),
        (False, (5, 5), "low", "NO-GO"),
        (True, (2, 2), "low", "NO-GO"),
        (True, (4, 4), "high", "PIVOT"),
        (True, (3, 3), "low", "PIVOT"),
        (True, (4, 3), "medium", "GO"),
    ],
)
def test_verdict_rule(knock, scores, risk, expected):
    assert verdict([Knockout(criterion="k", passed=knock)], dims(*scores), risk)[0] == expected


def test_model_cannot_set_the_verdict():
    payload = {
        "knockout_criteria": [{"criterion": "legal", "passed": False}],
        "dimensions": [{"name": "demand", "score": 5}],
        "executive_summary": "x",
        "verdict": "GO",
        "verdict_reason": "I say so",
    }
    out = ValidationSummaryOutput.model_validate({"tldr": "t", "content": "c", "payload": payload})
    decided = finalize(out, StageView(idea="", outputs={}))
    assert decided.payload.verdict == "NO-GO"
    assert "legal" in decided.payload.verdict_reason
    assert "verdict" not in str(
        ValidationSummaryOutput.model_json_schema()["$defs"]["ValidationSummary"]["properties"]
    )


def test_risk_level_rule():
    def claim(sev, sup):
        return AssessedClaim(statement="s", origin="inferred", severity=sev, support=sup)

    def risk(lk, im):
        return Risk(risk="r", likelihood=lk, impact=im)

    assert risk_level([claim("high", "unsupported")], [risk("low", "low")]) == "high"
    assert risk_level([claim("low", "supported")], [risk("high", "high")] * 2) == "high"
    assert risk_level([claim("high", "partial")], [risk("low", "low")]) == "medium"
    assert risk_level([claim("low", "supported")], [risk("low", "high")]) == "medium"
    assert risk_level([claim("low", "unsupported")], [risk("low", "low")]) == "low"


def story(i, *deps):
    return Story(
        id=f"STORY-{i:03d}",
        title="t",
        component="app",
        layer="frontend",
        implements=["CAP-F-001"],
        depends_on=[f"STORY-{d:03d}" for d in deps],
    )


def test_story_order_is_topological_with_ties_by_id():
    order, cycles = dependency_order([story(3, 1), story(1), story(2, 3), story(4)])
    assert order == ["STORY-001", "STORY-003", "STORY-002", "STORY-004"] and cycles == []


def test_story_cycles_are_reported():
    order, cycles = dependency_order([story(1, 2), story(2, 1), story(3)])
    assert cycles == [["STORY-001", "STORY-002"]]
    assert set(order) == {"STORY-001", "STORY-002", "STORY-003"}


def inv(**kw):
    base = {
        "property": "access_model",
        "value": "closed",
        "source": "his patients",
        "confidence": 0.95,
    }
    return {**base, **kw}


def test_an_incomplete_ambiguity_is_repaired_so_gate_1_can_ask():
    bare = Invariant.model_validate(inv(confidence=0.6))
    assert bare.is_ambiguous and "60%" in (bare.ambiguity or "")
    assert bare.clarification_options == ["closed", LEAVE_OPEN]
    one = Invariant.model_validate(inv(confidence=0.6, ambiguity="?", clarification_options=["a"]))
    assert one.ambiguity == "?" and one.clarification_options == ["a", "closed"]
    many = Invariant.model_validate(
        inv(confidence=0.6, ambiguity="?", clarification_options=["a", "A ", "b", "c", "d"])
    )
    assert many.clarification_options == ["a", "b", "c"]
    ok = Invariant.model_validate(
        inv(confidence=0.6, ambiguity="?", clarification_options=["a", "b"])
    )
    assert ok.is_ambiguous and ok.clarification_options == ["a", "b"]


def test_a_repeated_invariant_is_dropped_or_renamed_not_rejected():
    anchor = ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [inv(), inv(), inv(value="open to all"), inv(property="Access model")],
        }
    )
    assert [(i.property, i.value) for i in anchor.invariants] == [
        ("access_model", "closed"),
        ("access_model_2", "open to all"),
    ]
    assert [i.id for i in anchor.invariants] == ["INV-1", "INV-2"]


def test_clarify_rejects_choices_outside_the_options():
    anchor = ConceptAnchor.model_validate(
        {
            "intent": {"goal": "g"},
            "invariants": [
                inv(
                    property="session_medium",
                    confidence=0.5,
                    ambiguity="?",
                    clarification_options=["Video call", "Text chat"],
                )
            ],
        }
    )
    with pytest.raises(InputError, match="not an option"):
        anchor.clarify("session_medium", "carrier pigeon")
    assert (
        anchor.clarify("session-medium", "text chat").invariant("session_medium").value
        == "Text chat"
    )
    assert anchor.clarify("session_medium", "1").invariant("session_medium").value == "Video call"


def test_model_cannot_mark_an_invariant_clarified():
    schema = str(ConceptAnchor.model_json_schema())
    assert "user_clarified" not in schema and "auto_resolved" not in schema
    anchor = ConceptAnchor.model_validate(
        {"intent": {"goal": "g"}, "invariants": [inv(user_clarified=True)]}
    ).as_extracted()
    assert not anchor.invariants[0].user_clarified


def test_tolerant_keys_match_case_and_separators_but_misses_fail():
    data = {
        "Intent": {"Goal": "g", "Non-Goals": ["x"]},
        "INVARIANTS": [{"Property": "access model", "value": "v", "Source": "s", "confidence": 1}],
    }
    anchor = parse_contract(ConceptAnchor, data)
    assert anchor.intent.non_goals == ["x"] and anchor.invariants[0].property == "access_model"
    with pytest.raises(ContractViolation) as err:
        parse_contract(ConceptAnchor, {"intent": {"goal": "g"}, "invariant": []})
    assert err.value.mismatch == "missing_required_key"
    assert "invariants" in err.value.expected_keys and "invariant" in err.value.actual_keys
    with pytest.raises(ContractViolation) as empty:
        parse_contract(ConceptAnchor, {})
    assert empty.value.mismatch == "nil_required_input"
