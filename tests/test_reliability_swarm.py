"""A verification swarm whose agent never answers is bounded by its timeouts and reported as
inconclusive — the gate stays blocked until a person overrides it (issue 8). The ping-pong
handoff loop is covered by tests/test_verify_swarm.py."""

from __future__ import annotations

import json
import time

import pytest
from faults import Fault, FaultPlan, assert_consistent
from pipeline_helpers import POWER8_IDEA
from verify_helpers import CLEAN, service

from haytham.errors import GateError


@pytest.mark.parametrize(
    ("agent", "node"),
    [
        ("verifier-what-genericization-detector", "genericization_detector"),
        ("verifier-what-coordinator", "coordinator"),
    ],
)
def test_a_swarm_agent_that_never_answers_is_cut_off_and_inconclusive(
    tmp_path, monkeypatch, agent, node
):
    plan = FaultPlan(Fault("hang", agent)).install(monkeypatch)
    limits = {"HAYTHAM_SWARM_TIMEOUT": "5", "HAYTHAM_SWARM_NODE_TIMEOUT": "0.5"}
    svc = service(tmp_path, CLEAN, env=limits)
    with svc:
        sid = svc.create_session(POWER8_IDEA, session_id="hang")
        began = time.monotonic()
        assert svc.run(sid, auto_approve=True, until=2).gate == 2
        assert time.monotonic() - began < 30  # bounded, not hung
        root = tmp_path / "sessions" / sid
        what = json.loads((root / "verifications" / "what.json").read_text())
        assert (what["status"], what["passed"]) == ("inconclusive", False), what
        assert f"the swarm node {node} failed or timed out (node_timeout=0.5s" in what["reason"]
        assert plan.injected[agent] >= 1
        blocking = svc.status(sid)["blocking"]
        assert [b["id"] for b in blocking] == ["verification:inconclusive"]
        with pytest.raises(GateError, match="Verification inconclusive"):
            svc.approve(sid, 2)
        svc.override(sid, 2, "Checked the WHAT phase by hand.")
        assert svc.approve(sid, 2, continue_run=False).next_action == "system_traits"
    assert_consistent(root)
