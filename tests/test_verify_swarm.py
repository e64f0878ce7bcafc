"""The verification swarm: its limits, and every way it can fail is an inconclusive verdict."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import POWER8_IDEA, replay_settings
from verify_helpers import CLEAN, PINGPONG, calls_by_agent, events, service, write_lines

from haytham.errors import GateError
from haytham.models.factory import ModelRuntime
from haytham.stages import Phase
from haytham.storage.folder import SessionStore
from haytham.verify.config import SwarmLimits, VerifyConfig
from haytham.verify.swarm import _Calls, build_swarm, failure_reason

TASK = "# Task: verify the WHAT phase"


def _at_gate_2(tmp_path, *extra):
    svc = service(tmp_path, CLEAN, *extra)
    sid = svc.create_session(POWER8_IDEA, session_id="sw")
    out = svc.run(sid, auto_approve=True, until=2)
    assert out.gate == 2
    return svc, sid, tmp_path / "sessions" / sid


def _what(root):
    return json.loads((root / "verifications" / "what.json").read_text())


def test_ping_pong_hits_the_handoff_limit_and_blocks_the_gate_until_overridden(tmp_path):
    svc, sid, root = _at_gate_2(tmp_path, PINGPONG)
    what = _what(root)
    assert (what["status"], what["passed"], what["strategy"]) == ("inconclusive", False, "swarm")
    assert "exceeded its handoff limit (max_handoffs=6)" in what["reason"]
    assert "invariant_checker → genericization_detector → invariant_checker" in what["reason"]
    (run,) = [e for e in events(root, "swarm_run") if e["stage"] == "verify-what"]
    assert run["data"]["status"] == "failed" and len(run["data"]["history"]) == 6
    calls = calls_by_agent(root)
    assert calls["verifier-what-invariant-checker"] == 3
    assert calls["verifier-what-genericization-detector"] == 3
    assert "verifier-what-coordinator" not in calls  # never silently passed

    blocking = svc.status(sid)["blocking"]
    assert [b["id"] for b in blocking] == ["verification:inconclusive"]
    assert "handoff limit" in blocking[0]["message"]
    with pytest.raises(GateError, match="Verification inconclusive"):
        svc.approve(sid, 2)
    svc.override(sid, 2, "Reviewed the WHAT phase by hand.")
    assert svc.approve(sid, 2).gate == 3
    overrides = json.loads((root / "gates.json").read_text())["2"]["overrides"]
    assert [o["target"] for o in overrides] == ["verification:inconclusive"]
    assert "the inconclusive verification" in svc.export(sid, "markdown")


def test_a_swarm_that_ends_without_the_coordinator_is_inconclusive(tmp_path):
    quits = write_lines(
        tmp_path / "quits.jsonl",
        [
            {
                "agent": "verifier-what-invariant-checker",
                "turn": 1,
                "when": [TASK],
                "response": [{"text": "Everything looks fine to me."}],
            }
        ],
    )
    svc, sid, root = _at_gate_2(tmp_path, quits)
    what = _what(root)
    assert what["status"] == "inconclusive"
    assert "ended at invariant_checker without the coordinator's verdict" in what["reason"]
    assert svc.status(sid)["blocking"][0]["id"] == "verification:inconclusive"


def test_a_coordinator_without_a_valid_verdict_is_inconclusive_within_its_turn_budget(tmp_path):
    bad = {"tool": "PhaseVerification", "input": {"phase": "WHAT", "invariants_honored": []}}
    broken = write_lines(
        tmp_path / "broken.jsonl",
        [
            {"agent": "verifier-what-coordinator", "turn": t, "when": [TASK], "response": [bad]}
            for t in (1, 2, 3)
        ],
    )
    svc, sid, root = _at_gate_2(tmp_path, broken)
    what = _what(root)
    assert what["status"] == "inconclusive" and not what["passed"]
    assert "coordinator" in what["reason"]
    assert calls_by_agent(root)["verifier-what-coordinator"] == 2  # the answer + one repair


def test_a_missing_cassette_line_is_inconclusive_with_the_cause(tmp_path):
    svc = service(tmp_path)  # pipeline only: no verifier lines at all
    sid = svc.create_session(POWER8_IDEA, session_id="bare")
    svc.run(sid, auto_approve=True, until=2)
    what = _what(tmp_path / "sessions" / sid)
    assert what["status"] == "inconclusive"
    assert "model call failed" in what["reason"] and "No recorded turn" in what["reason"]


def test_swarm_limits_are_set_from_the_config(tmp_path):
    limits = SwarmLimits(
        max_handoffs=5, max_iterations=7, execution_timeout=60.0, node_timeout=20.0
    )
    settings = replay_settings(tmp_path, cassette=CLEAN)
    files = SessionStore(tmp_path / "sessions").create("limits")
    with ModelRuntime(settings) as models:
        swarm = build_swarm(
            settings, models, Phase.WHAT, VerifyConfig(limits=limits), _Calls(files, "verify-what")
        )
    assert (
        swarm.max_handoffs,
        swarm.max_iterations,
        swarm.execution_timeout,
        swarm.node_timeout,
    ) == (5, 7, 60.0, 20.0)
    assert list(swarm.nodes) == [
        "invariant_checker",
        "genericization_detector",
        "consistency_validator",
        "coordinator",
    ]
    assert swarm.entry_point is not None and swarm.entry_point.name == "invariant_checker"


def test_failure_reasons_name_the_limit_that_stopped_the_swarm():
    limits = SwarmLimits(max_handoffs=4, max_iterations=6, execution_timeout=10.0, node_timeout=5.0)
    assert "handoff limit (max_handoffs=4)" in failure_reason(["a", "b"] * 2, "a", limits, 1, [])
    assert "timed out (execution_timeout=10s)" in failure_reason(["a"], "b", limits, 11.0, [])
    assert "model call failed" in failure_reason(["a"], "b", limits, 1.0, ["b: boom"])
    assert "node b failed or timed out" in failure_reason(["a"], "b", limits, 1.0, [])


def test_a_clean_run_with_verifiers_costs_22_calls_plus_3_input_validations(tmp_path):
    with service(tmp_path, CLEAN) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="clean")
        assert svc.run(sid, auto_approve=True).status == "done"
    root = tmp_path / "sessions" / sid
    calls = calls_by_agent(root)
    validation = sum(n for a, n in calls.items() if a.endswith("-input-validator"))
    verifiers = {a: n for a, n in calls.items() if a.startswith("verifier-")}
    # 21 calls, and the WHY verifier once more: Gate 1's automatic clarification changed the
    # anchor, so the phase is re-checked against it (no stage re-runs)
    assert validation == 3 and sum(calls.values()) - validation == 22
    assert len(verifiers) == 2 + 2 * 4
    assert verifiers.pop("verifier-why") == 2 and set(verifiers.values()) == {1}
    for phase in ("why", "what", "how", "stories"):
        v = json.loads((root / "verifications" / f"{phase}.json").read_text())
        assert v["status"] == "passed" and v["round"] == 0
    assert not events(root, "rework_requested")
