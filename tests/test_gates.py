"""Gate decisions through the service: refusals change nothing; decisions are recorded."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import (
    POWER8_IDEA,
    capture_prompts,
    cassette_with,
    replay_cli_args,
    replay_settings,
)

from haytham.app import make_service
from haytham.errors import GateError, InputError


@pytest.fixture
def at_gate_2(tmp_path):
    svc = make_service(replay_settings(tmp_path))
    sid = svc.create_session(POWER8_IDEA)
    svc.run(sid, auto_approve=True, until=2)
    yield svc, sid, tmp_path / "sessions" / sid
    svc.close()


def _files(root):
    return {
        p.relative_to(root): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name not in ("state.db", ".lock", "events.jsonl")
    }


@pytest.mark.parametrize(
    ("gate", "command", "error", "text"),
    [
        (2, {"kind": "override", "reason": "  "}, InputError, "needs a reason"),
        (2, {"kind": "rework", "stage": "mvp-scope", "feedback": ""}, InputError, "needs feedback"),
        (2, {"kind": "rework", "stage": "idea-analysis", "feedback": "x"}, GateError, "own stages"),
        (2, {"kind": "clarify", "invariant": "access_model", "choice": "x"}, GateError, "Gate 1"),
        (2, {"kind": "override", "reason": "why"}, GateError, "nothing blocking"),
        (1, {"kind": "approve"}, GateError, "not waiting at Gate 1"),
        (5, {"kind": "approve"}, InputError, "Gate must be 1, 2, 3 or 4"),
        (2, {"kind": "launch"}, InputError, "Unknown gate command"),
    ],
)
def test_bad_decisions_change_nothing(at_gate_2, gate, command, error, text):
    svc, sid, root = at_gate_2
    before = _files(root)
    with pytest.raises(error, match=text):
        svc.decide(sid, gate, command)
    assert _files(root) == before
    assert svc.status(sid)["gate"] == 2


def test_rework_sends_feedback_into_the_stage_prompt_and_reruns_the_phase(at_gate_2, monkeypatch):
    svc, sid, root = at_gate_2
    prompts = capture_prompts(monkeypatch)
    out = svc.rework(sid, "mvp-scope", "Keep the 1 receiver + 7 givers structure IN scope.")
    assert out.gate == 2
    reran = [p["agent"] for p in prompts if p["agent"] in ("mvp-scope", "capability-model")]
    assert reran == ["mvp-scope", "capability-model"]
    mvp = next(p for p in prompts if p["agent"] == "mvp-scope")
    assert "## Reviewer feedback to address" in mvp["text"]
    assert "1 receiver + 7 givers structure IN scope" in mvp["text"]
    gates = json.loads((root / "gates.json").read_text())
    assert gates["2"]["status"] == "open" and gates["2"]["round"] == 2
    assert gates["2"]["rework_stage"] == "mvp-scope"
    review = json.loads(next((root / "reviews").glob("*mvp-scope.json")).read_text())
    assert review["verdict"] == "rework" and review["source"] == "reviewer"
    assert "Reviewer feedback" not in svc.show(sid, "capability-model")


def test_approving_twice_is_refused(at_gate_2):
    svc, sid, _ = at_gate_2
    svc.approve(sid, 2, continue_run=False)
    with pytest.raises(GateError, match="not waiting at Gate 2"):
        svc.approve(sid, 2)


def test_reject_ends_the_session(at_gate_2):
    svc, sid, root = at_gate_2
    out = svc.reject(sid, 2, "not this one")
    assert out.status == "rejected"
    assert json.loads((root / "summary.json").read_text())["status"] == "rejected"
    assert json.loads((root / "gates.json").read_text())["2"]["status"] == "rejected"


def test_clear_from_and_fork(at_gate_2):
    svc, sid, root = at_gate_2
    svc.clear_from(sid, "capability-model")
    assert not (root / "stages" / "06-capability-model").exists()
    assert (root / "stages" / "05-mvp-scope").exists()
    assert svc.run(sid).gate == 2
    assert (root / "stages" / "06-capability-model" / "output.json").exists()
    new = svc.fork(sid, "mvp-scope")
    new_root = root.parent / new
    assert not (new_root / "stages" / "05-mvp-scope").exists()
    assert json.loads((new_root / "session.json").read_text())["forked_from"]["session_id"] == sid
    assert svc.run(new).gate == 2
    assert (new_root / "stages" / "06-capability-model" / "output.json").exists()
    assert (root / "stages" / "06-capability-model" / "output.json").exists()


def _no_go_cassette(tmp_path):
    lines = []
    for line in cassette_with(tmp_path, passing_verifiers=True).read_text().splitlines():
        entry = json.loads(line)
        if entry["agent"] == "validation-summary":
            tool = next(i for i in entry["response"] if "tool" in i)
            tool["input"]["payload"]["knockout_criteria"][0]["passed"] = False
        lines.append(json.dumps(entry))
    path = tmp_path / "no_go.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_no_go_blocks_gate_1_until_overridden_and_the_override_is_logged(tmp_path, capsys):
    from haytham.cli import main

    cassette = _no_go_cassette(tmp_path)
    opts = replay_cli_args(tmp_path, cassette)
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    assert main(["run", "--idea-file", str(idea), "--session-id", "nogo", *opts]) == 0
    for prop in ("interaction_model", "session_medium"):
        assert main(["clarify", "nogo", "--invariant", prop, "--choice", "1", *opts]) == 0
    capsys.readouterr()
    assert main(["approve", "nogo", "--gate", "1", *opts]) == 2
    assert "verdict:NO-GO" in capsys.readouterr().err
    assert (
        main(["override", "nogo", "--gate", "1", "--reason", "the founder accepts it", *opts]) == 0
    )
    assert main(["status", "nogo", *opts]) == 0
    assert (
        "override at Gate 1 (the NO-GO verdict): the founder accepts it" in capsys.readouterr().out
    )
    assert main(["approve", "nogo", "--gate", "1", *opts]) == 0
    root = tmp_path / "sessions" / "nogo"
    override = json.loads((root / "gates.json").read_text())["1"]["overrides"][0]
    assert override["target"] == "verdict:NO-GO" and not override["auto"]
    events = (root / "events.jsonl").read_text()
    assert '"command":"override"' in events and "the founder accepts it" in events
    capsys.readouterr()
    assert main(["export", "nogo", "--format", "markdown", *opts]) == 0
    assert "Gate 1: the NO-GO verdict — the founder accepts it" in capsys.readouterr().out
