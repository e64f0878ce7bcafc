"""Every prompt under test (issue 25 point 4): the replay model records every request it receives
(stages, anchor extraction, intake, input validators and revisers, phase verifiers, every swarm
agent, change requests, judges), and every call after anchor extraction carries the rendered
anchor verbatim."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pipeline_helpers import POWER8, POWER8_IDEA, capture_prompts, replay_settings

from haytham.app import make_service
from haytham.evals.budget import Meter
from haytham.evals.judge import Judge, JudgeOptions
from haytham.evals.rubrics import load_rubrics
from haytham.models.factory import ModelRuntime
from haytham.stages import ANCHOR_AGENT, STAGES, Phase
from haytham.verify.config import ROLES, VerifyConfig, input_validator_agent, reviser_agent

FULL = POWER8 / "full"
REQUEST = "Send reminders by SMS instead of email."
JUDGED = ("concept-fidelity", "anchor-quality", "stage-mvp-scope")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def _cassette(tmp_path: Path) -> Path:
    """The full replay run (intake, stages, input validators, verifiers), with an input item
    rejected and revised by its producer, plus a change request on mvp-scope and agreeing judge
    replicas (test fixtures)."""
    lines = [x for f in sorted(FULL.glob("*.jsonl")) for x in _lines(f)]
    lines += _lines(POWER8 / "verify" / "receiving.jsonl")  # a rejected item and its reviser
    scope = next(x for x in lines if x["agent"] == "mvp-scope")
    revised = copy.deepcopy(next(r for r in scope["response"] if "tool" in r)["input"])
    revised["payload"]["in_scope"][2]["description"] += " Reminders go out by SMS."
    lines.append(
        {
            "agent": "change-request",
            "turn": 1,
            "response": [
                {
                    "tool": "MvpScopeOutputChange",
                    "input": {
                        "revised": revised,
                        "why": "Patients read SMS sooner than email.",
                        "invariants_touched": [],
                        "breaks": [],
                    },
                }
            ],
        }
    )
    for rubric in JUDGED:
        for n in (1, 2):
            lines.append(
                {
                    "agent": f"judge-{rubric}",
                    "turn": 1,
                    "when": [f"Replica {n}"],
                    "response": [{"tool": "Score", "input": {"score": 4, "rationale": "faithful"}}],
                }
            )
    out = tmp_path / "everything.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return out


def _missing_anchor(calls: list[dict[str, Any]], anchor: str) -> list[str]:
    """The agents of ``calls`` whose request (system prompt and messages) lacks ``anchor``."""
    return [c["agent"] for c in calls if anchor not in c["system"] + "\n" + c["text"]]


def test_every_call_after_anchor_extraction_carries_the_anchor_verbatim(
    tmp_path: Path, monkeypatch
) -> None:
    prompts = capture_prompts(monkeypatch)
    settings = replay_settings(tmp_path, _cassette(tmp_path), env={"HAYTHAM_INTAKE": "on"})
    with make_service(settings) as svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, until=1).gate == 1  # the WHY verifier ran on the extracted anchor
        state = svc.load_state(sid)
        extracted = state.anchor_text
        assert state.anchor is not None and extracted == state.anchor.render()
        at_gate_1 = len(prompts)

        assert svc.run(sid, auto_approve=True, until=2).gate == 2  # ambiguities resolved
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        assert svc.apply_change(sid, proposal).gate == 2  # capability-model re-ran, re-verified
        assert svc.run(sid, auto_approve=True).status == "done"
        state = svc.load_state(sid)
    final = state.anchor_text
    assert state.anchor is not None and final == state.anchor.render() and final != extracted

    judge = Judge(settings, ModelRuntime(settings), Meter(None), JudgeOptions(k=2), None)
    for rubric in load_rubrics(ids=list(JUDGED)):
        assert judge.judge(rubric, state.dump()).source == "judge"

    # the capture saw every kind of model call, whoever built the model
    agents = [c["agent"] for c in prompts]
    config = VerifyConfig()
    expected = {"intake", ANCHOR_AGENT, "change-request", *(s.slug for s in STAGES)}
    expected |= {config.single_agent(Phase.WHY), config.single_agent(Phase.HOW)}
    expected |= {config.swarm_agent(p, r) for p in (Phase.WHAT, Phase.STORIES) for r in ROLES}
    expected |= {input_validator_agent(s.slug) for s in STAGES if s.receives}
    expected.add(reviser_agent("mvp-scope"))
    expected |= {f"judge-{r}" for r in JUDGED}
    assert expected <= set(agents), sorted(expected - set(agents))

    # ... and every call after anchor extraction carries the anchor of its time, verbatim
    first = agents.index(ANCHOR_AGENT) + 1
    assert agents[:first].count("intake") == 1 and len(agents[first:at_gate_1]) >= 4
    missing = _missing_anchor(prompts[first:at_gate_1], extracted)
    missing += _missing_anchor(prompts[at_gate_1:], final)
    assert not missing, f"model calls without the rendered anchor: {missing}"
