"""The automatic rework policy (pure) and the verify action that applies it."""

from __future__ import annotations

import json

from pipeline_helpers import POWER8

from haytham.pipeline.actions import verify_phase
from haytham.schemas.verification import InvariantViolation, PhaseVerification
from haytham.stages import Phase
from haytham.state import ReworkTracker, SessionState
from haytham.verify.rework import decide, issues_of
from haytham.verify.verdict import finalize, stage_slug

ANCHOR = next(
    json.loads(x)["response"][-1]["input"]
    for x in (POWER8 / "pipeline.jsonl").read_text().splitlines()
    if json.loads(x)["agent"] == "anchor-extraction"
)


def _state(**kw):
    return SessionState.of({"anchor": ANCHOR, **kw})


def _verdict(*violations, passed=None):
    vs = [
        InvariantViolation(invariant=i, violation=f"{i} broken", severity=sev, stage=stage)
        for i, sev, stage in violations
    ]
    blocking = any(v.severity == "blocking" for v in vs)
    return finalize(
        PhaseVerification(
            phase="WHAT", passed=not blocking if passed is None else passed, invariants_violated=vs
        ),
        Phase.WHAT,
        "swarm",
    )


def test_a_passing_phase_opens_the_gate():
    d = decide(Phase.WHAT, _verdict(), _state(), max_rounds=2)
    assert d.outcome == "clear" and d.route is None and d.reviews == {}


def test_blocking_violations_rework_the_earliest_stage_with_an_artifact_per_stage():
    v = _verdict(
        ("access_model", "warning", "mvp-scope"),
        ("group_structure", "blocking", "capability-model"),
        ("orchestrator_role", "blocking", "mvp-scope"),
    )
    d = decide(Phase.WHAT, v, _state(), max_rounds=2)
    assert (d.outcome, d.route, d.stage) == ("rework", "mvp_scope", "mvp-scope")
    assert set(d.reviews) == {"mvp-scope", "capability-model"}
    scope = d.reviews["mvp-scope"]
    assert (scope.verdict, scope.source, scope.round) == ("rework", "verifier", 1)
    assert [i.detail for i in scope.issues] == ["orchestrator_role: orchestrator_role broken"]
    assert any("the psychologist forms groups and runs sessions" in s for s in scope.suggestions)
    assert d.tracker == ReworkTracker(
        round=1,
        last_stage="mvp-scope",
        keys=[
            "violation:group_structure:capability-model",
            "violation:orchestrator_role:mvp-scope",
        ],
    )


def test_the_same_violation_twice_stalls_and_max_rounds_stop():
    v = _verdict(("Group structure (1+7)", "blocking", "mvp-scope"))
    first = decide(Phase.WHAT, v, _state(), max_rounds=2)
    assert first.outcome == "rework"
    assert first.tracker.keys == ["violation:group_structure:mvp-scope"]  # the anchor's name
    again = decide(Phase.WHAT, v, _state(rework={"WHAT": first.tracker}), max_rounds=2)
    assert again.outcome == "stalled" and again.route is None
    assert "the same violation came back" in again.verification.warnings[-1]
    other = _verdict(("access_model", "blocking", "mvp-scope"))
    tracker = {"round": 2, "keys": ["violation:x:mvp-scope"], "last_stage": "mvp-scope"}
    spent = decide(Phase.WHAT, other, _state(rework={"WHAT": tracker}), max_rounds=2)
    assert spent.outcome == "max_rounds" and "2 of 2 round(s) used" in spent.note
    assert decide(Phase.WHAT, other, _state(), max_rounds=0).outcome == "max_rounds"


def test_blocking_validator_findings_are_reworked_as_mechanical_contracts():
    finding = {
        "validator": "trait_propagation",
        "severity": "blocking",
        "stage": "mvp-scope",
        "invariant": None,
        "message": "open registration under closed access",
    }
    state = _state(validations={"mvp-scope": [finding]})
    verification = finalize(PhaseVerification(phase="WHAT", passed=False), Phase.WHAT, "swarm")
    (issue,) = issues_of(Phase.WHAT, verification, state)
    assert issue.key == "finding:trait_propagation:mvp-scope" and issue.source == "validator"
    d = decide(Phase.WHAT, verification, state, max_rounds=2)
    assert d.outcome == "rework" and d.reviews["mvp-scope"].source == "validator"


def test_inconclusive_and_warnings_open_the_gate_without_rework():
    inconclusive = PhaseVerification(
        phase="WHAT", passed=False, status="inconclusive", reason="swarm failed"
    )
    assert decide(Phase.WHAT, inconclusive, _state(), max_rounds=2).outcome == "clear"
    warned = _verdict(("access_model", "warning", "mvp-scope"))
    assert (
        warned.status == "passed"
        and decide(Phase.WHAT, warned, _state(), max_rounds=2).outcome == "clear"
    )


def test_finalize_owns_the_verdict_fields():
    assert stage_slug("MVP Scope", Phase.WHAT) == "mvp-scope"
    assert stage_slug("stage 6", Phase.WHAT) == "capability-model"
    assert stage_slug("capability_model", Phase.WHAT) == "capability-model"
    v = _verdict(("group_structure", "blocking", "idea-analysis"), passed=True)
    assert (v.passed, v.status) == (False, "failed")  # blocking wins over the model's "passed"
    assert v.invariants_violated[0].stage == "mvp-scope"
    assert "named stage 'idea-analysis' (another phase)" in v.warnings[0]
    said_no = _verdict(passed=False)
    assert (said_no.passed, said_no.status) == (False, "inconclusive")


class _Verifier:
    max_rework_rounds = 1

    def __init__(self, verdict):
        self.verdict, self.recorded = verdict, []

    def __call__(self, phase, state):
        return self.verdict

    def record_rework(self, phase, decision):
        self.recorded.append(decision.outcome)


def test_the_verify_action_routes_back_or_opens_the_gate():
    blocking = _verdict(("group_structure", "blocking", "mvp-scope"))
    verifier = _Verifier(blocking)
    state = _state()
    after = verify_phase(state, phase=Phase.WHAT, verifier=verifier)
    assert after.route == "mvp_scope" and after.status == "running"
    assert after.reviews["mvp-scope"].source == "verifier"
    assert after.rework["WHAT"].round == 1 and after.gates == {}
    assert after.verifications["WHAT"].round == 0

    again = verify_phase(after, phase=Phase.WHAT, verifier=verifier)
    assert again.route is None and again.status == "waiting_gate_2"
    assert again.rework == {}  # reset for the next gate visit
    gate = again.gates[2]
    assert gate.status == "open" and gate.rework_stage == "mvp-scope"
    assert "the same violation came back" in gate.feedback
    assert verifier.recorded == ["rework", "stalled"]

    off = verify_phase(state, phase=Phase.WHAT, verifier=None)
    assert off.verifications["WHAT"].status == "off" and off.route is None
