"""ADR-022's documented drift on Power of 8, replayed: caught, reworked, reported (issue 4)."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import POWER8_IDEA, replay_cli_args
from verify_helpers import (
    CLEAN,
    DRIFT,
    DRIFTED_STAGES,
    calls_by_agent,
    capture_all_prompts,
    events,
    service,
)

from haytham.agents.context import FEEDBACK_HEADING
from haytham.cli import main
from haytham.errors import GateError
from haytham.reports.blockers import target_name


@pytest.fixture
def drift(tmp_path, monkeypatch):
    prompts = capture_all_prompts(monkeypatch)
    svc = service(tmp_path, CLEAN, DRIFT, drop=DRIFTED_STAGES)
    sid = svc.create_session(POWER8_IDEA, session_id="drift")
    yield svc, sid, tmp_path / "sessions" / sid, prompts
    svc.close()


def _json(path):
    return json.loads(path.read_text())


def test_what_swarm_blocks_the_drift_and_one_rework_round_clears_it(drift):
    svc, sid, root, prompts = drift
    out = svc.run(sid, auto_approve=True, until=2)
    assert out.gate == 2

    # the swarm flagged the dropped invariants as blocking and sent mvp-scope back
    (requested,) = [e for e in events(root, "rework_requested") if e["data"]["phase"] == "WHAT"]
    assert requested["data"]["stage"] == "mvp-scope" and requested["data"]["round"] == 1
    review = requested["data"]["reviews"]["mvp-scope"]
    assert review["source"] == "verifier" and review["verdict"] == "rework"
    blocking = {i["detail"].split(":")[0] for i in review["issues"] if i["severity"] == "blocking"}
    assert blocking == {"group_structure", "orchestrator_role", "access_model", "interaction_model"}
    assert any("8 per session: 1 receiver + 7 givers" in s for s in review["suggestions"])

    # the rework round received the feedback in its prompt; the first run did not
    scope_prompts = [p["text"] for p in prompts if p["agent"] == "mvp-scope"]
    assert len(scope_prompts) == 2
    assert FEEDBACK_HEADING not in scope_prompts[0]
    assert FEEDBACK_HEADING in scope_prompts[1]
    assert "SCOPE-5 'Organizing users into groups' is marked OUT of scope" in scope_prompts[1]
    assert "Verdict: rework (from the verifier, round 1)" in scope_prompts[1]

    # the corrected turn cleared it: the phase re-ran and the swarm passed on the second look
    calls = calls_by_agent(root)
    assert calls["mvp-scope"] == 2 and calls["capability-model"] == 2
    assert calls["verifier-what-coordinator"] == 2
    what = _json(root / "verifications" / "what.json")
    assert (what["status"], what["passed"], what["round"], what["strategy"]) == (
        "passed",
        True,
        1,
        "swarm",
    )
    scope = _json(root / "stages" / "05-mvp-scope" / "output.json")
    assert "SCOPE-2" in {i["id"] for i in scope["payload"]["in_scope"]}
    assert scope["payload"]["in_scope"][1]["title"] == "Circles of 1 receiver + 7 givers"

    # the decision is on record: review artifact, gate record, events; nothing is left blocking
    (saved,) = list((root / "reviews").glob("*mvp-scope.json"))
    assert _json(saved)["source"] == "verifier"
    gate = _json(root / "gates.json")["2"]
    assert gate["status"] == "open" and gate["rework_stage"] == "mvp-scope"
    assert gate["feedback"].startswith("[automatic rework by the verifier]")
    assert [e["data"]["outcome"] for e in events(root, "rework_cleared")] == ["clear"]
    assert svc.status(sid)["blocking"] == []


def test_how_verifier_reports_the_realtime_contradiction_and_stalls(drift, tmp_path, capsys):
    svc, sid, root, prompts = drift
    svc.run(sid, auto_approve=True, until=2)
    out = svc.approve(sid, 2)
    assert out.gate == 3

    how = _json(root / "verifications" / "how.json")
    assert how["status"] == "failed" and not how["passed"] and how["strategy"] == "single"
    by_stage = {v["stage"]: v for v in how["invariants_violated"]}
    realtime = by_stage["system-traits"]
    assert realtime["severity"] == "blocking"
    assert "realtime: false" in realtime["violation"]
    assert "real-time subscriptions" in realtime["violation"]
    assert by_stage["architecture-decisions"]["invariant"] == "access_model"

    # one automatic round with the feedback, then the same violations came back: stall
    traits_prompts = [p["text"] for p in prompts if p["agent"] == "system-traits"]
    assert len(traits_prompts) == 2 and FEEDBACK_HEADING in traits_prompts[1]
    arch_prompts = [p["text"] for p in prompts if p["agent"] == "architecture-decisions"]
    assert "DEC-AUTH-001 is open registration" in arch_prompts[1]
    (requested,) = [e for e in events(root, "rework_requested") if e["data"]["phase"] == "HOW"]
    assert set(requested["data"]["reviews"]) == {"system-traits", "architecture-decisions"}
    traits_review = requested["data"]["reviews"]["system-traits"]
    assert any(
        s.startswith("Honour interaction_model = Synchronous live sessions")
        for s in traits_review["suggestions"]
    )
    (stopped,) = events(root, "rework_stopped")
    assert stopped["data"]["outcome"] == "stalled" and stopped["data"]["phase"] == "HOW"
    assert any("the same violation came back" in w for w in how["warnings"])
    assert how["round"] == 1

    # the gate shows what is still violated and refuses approval until overridden
    status = svc.status(sid)
    assert {b["id"] for b in status["blocking"]} == {
        "violation:realtime trait consistency:system-traits",
        "violation:access_model:architecture-decisions",
    }
    with pytest.raises(GateError, match="2 blocking"):
        svc.approve(sid, 3)
    svc.override(
        sid,
        3,
        "The founder accepts this for a first pilot.",
        target="violation:access_model:architecture-decisions",
    )
    with pytest.raises(GateError, match="1 blocking"):
        svc.approve(sid, 3)
    svc.override(sid, 3, "Realtime is bought from Daily; the trait is wrong, noted.")
    assert svc.approve(sid, 3).gate == 4

    # override and rework decisions: gates.json, events.jsonl, status, export
    gate = _json(root / "gates.json")["3"]
    assert len(gate["overrides"]) == 2 and gate["rework_stage"] == "system-traits"
    commands = [e["data"] for e in events(root, "gate_command") if e["data"].get("gate") == 3]
    assert [c["command"] for c in commands] == ["override", "override", "approve"]
    assert len(svc.status(sid)["overrides"]) == 2
    markdown = svc.export(sid, "markdown")
    named = target_name("violation:access_model:architecture-decisions")  # in people's words
    assert named == "access_model not honoured in Stage 9 · Architecture decisions"
    assert f"Gate 3: {named} — The founder accepts" in markdown
    assert "Gate 2 rework of mvp-scope: [automatic rework by the verifier]" in markdown
    assert "Gate 3 rework of system-traits: [automatic rework by the verifier]" in markdown
    exported = json.loads(svc.export(sid, "json"))
    assert len(exported["overrides"]) == 2
    assert [r["stage"] for r in exported["review_log"]] == [
        "mvp-scope",
        "system-traits",
        "architecture-decisions",
    ]
    assert {r["source"] for r in exported["review_log"]} == {"verifier"}
    assert exported["verifications"]["HOW"]["status"] == "failed"

    cassette = tmp_path / "cassette.jsonl"
    assert main(["status", sid, *replay_cli_args(tmp_path, cassette)]) == 0
    printed = capsys.readouterr().out
    assert f"override at Gate 3 ({named})" in printed
    assert "verify-how" in printed and "verify-what" in printed
