"""Verification configuration: strategies from the settings, distinct agents, off/single."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import POWER8_IDEA, replay_settings
from verify_helpers import CLEAN, calls_by_agent, events, service, write_lines

from haytham.config import Settings, load_settings
from haytham.errors import ConfigError
from haytham.models.factory import ModelRuntime
from haytham.stages import STAGES, Phase
from haytham.storage.folder import SessionStore
from haytham.verify.config import SwarmLimits, VerifyConfig
from haytham.verify.factory import make_verifier


def test_defaults_follow_adr_022():
    c = VerifyConfig.from_settings(Settings())
    assert [c.strategy(p) for p in Phase] == ["single", "swarm", "single", "swarm"]
    assert c.max_rework_rounds == 2 and c.tier == "heavy" and c.limits == SwarmLimits()
    assert c.agents(Phase.WHY) == ("verifier-why",)
    assert c.agents(Phase.WHAT) == (
        "verifier-what-invariant-checker",
        "verifier-what-genericization-detector",
        "verifier-what-consistency-validator",
        "verifier-what-coordinator",
    )


def test_environment_overrides_and_bad_values():
    c = VerifyConfig.from_settings(
        _settings(
            {
                "HAYTHAM_VERIFY_WHAT": "single",
                "HAYTHAM_VERIFY_HOW": "OFF",
                "HAYTHAM_VERIFY_STORIES": "swarm",
                "HAYTHAM_MAX_REWORK_ROUNDS": "1",
                "HAYTHAM_SWARM_MAX_HANDOFFS": "8",
                "HAYTHAM_SWARM_TIMEOUT": "120",
            }
        )
    )
    assert [c.strategy(p) for p in Phase] == ["single", "single", "off", "swarm"]
    assert c.agents(Phase.HOW) == ()
    assert (c.max_rework_rounds, c.limits.max_handoffs, c.limits.execution_timeout) == (1, 8, 120.0)
    assert c.limits.max_iterations == 8 and c.limits.node_timeout == 240.0
    with pytest.raises(ConfigError, match="HAYTHAM_VERIFY_WHY in the environment"):
        _settings({"HAYTHAM_VERIFY_WHY": "vote"})
    with pytest.raises(ConfigError, match="HAYTHAM_MAX_REWORK_ROUNDS .*valid integer"):
        _settings({"HAYTHAM_MAX_REWORK_ROUNDS": "two"})
    with pytest.raises(ConfigError, match="HAYTHAM_MAX_REWORK_ROUNDS .*greater than or equal to 0"):
        _settings({"HAYTHAM_MAX_REWORK_ROUNDS": "-1"})
    with pytest.raises(ConfigError, match="HAYTHAM_VERIFY_TIER"):
        _settings({"HAYTHAM_VERIFY_TIER": "huge"})
    with pytest.raises(ConfigError, match="HAYTHAM_SWARM_NODE_TIMEOUT .*greater than 0"):
        _settings({"HAYTHAM_SWARM_NODE_TIMEOUT": "0"})


def _settings(env: dict[str, str]) -> Settings:
    return load_settings(env=env, dotenv=None)


@pytest.mark.parametrize(
    "producer", [s.slug for s in STAGES] + ["anchor-extraction", "mvp-scope-reviser"]
)
def test_a_verifier_is_never_a_producing_agent(producer):
    with pytest.raises(ConfigError, match="never the producing agent"):
        VerifyConfig(rename={"verifier-what-coordinator": producer})


def test_verifier_agents_are_distinct_and_the_factory_enforces_it(tmp_path):
    with pytest.raises(ConfigError, match="used twice"):
        VerifyConfig(rename={"verifier-how": "verifier-why"})
    # an unused phase may keep any name; only the configured strategy's agents count
    VerifyConfig(strategies={Phase.HOW: "off"}, rename={"verifier-how": "system-traits"})
    settings = replay_settings(tmp_path)
    files = SessionStore(tmp_path / "sessions").create("cfg")
    with ModelRuntime(settings) as models:
        with pytest.raises(ConfigError, match="never the producing agent"):
            make_verifier(settings, models, files, _bypass())
        verifier = make_verifier(settings, models, files, VerifyConfig())
        assert verifier.max_rework_rounds == 2


def _bypass() -> VerifyConfig:
    """A config that skipped its own check (e.g. mutated after construction)."""
    c = VerifyConfig()
    object.__setattr__(c, "rename", {"verifier-why": "idea-analysis"})
    return c


def test_off_everywhere_makes_no_verifier_call(tmp_path):
    off = {f"HAYTHAM_VERIFY_{phase.value}": "off" for phase in Phase}
    with service(tmp_path, CLEAN, env=off) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="off")
        assert svc.run(sid, auto_approve=True).status == "done"
    root = tmp_path / "sessions" / sid
    assert not [a for a in calls_by_agent(root) if a.startswith("verifier")]
    what = json.loads((root / "verifications" / "what.json").read_text())
    assert (what["status"], what["strategy"]) == ("off", "off")
    assert "HAYTHAM_VERIFY_WHAT=off" in what["reason"]


def test_mechanical_failures_short_circuit_the_verifier(tmp_path):
    """Stories over the appetite fail the stage check: the swarm is not run (cheapest first)."""
    from pipeline_helpers import POWER8

    with service(
        tmp_path,
        CLEAN,
        POWER8 / "stories_still_over.jsonl",
        drop=frozenset({"story-generation"}),
        env={"HAYTHAM_INPUT_VALIDATION": "off"},
    ) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="mech", appetite="small")
        assert svc.run(sid, auto_approve=True, until=4).gate == 4
    root = tmp_path / "sessions" / sid
    stories = json.loads((root / "verifications" / "stories.json").read_text())
    assert stories["status"] == "inconclusive"
    assert stories["reason"].startswith("not run: 1 check on this phase's stages failed first")
    assert not [a for a in calls_by_agent(root) if a.startswith("verifier-stories")]
    done = [e for e in events(root, "stage_completed") if e["stage"] == "verify-stories"]
    assert done[-1]["data"]["status"] == "inconclusive"


def test_single_strategy_at_what_uses_one_agent(tmp_path):
    line = {
        "agent": "verifier-what",
        "turn": 1,
        "response": [{"tool": "PhaseVerification", "input": {"phase": "WHAT", "passed": True}}],
    }
    extra = write_lines(tmp_path / "what.jsonl", [line])
    with service(tmp_path, CLEAN, extra, env={"HAYTHAM_VERIFY_WHAT": "single"}) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="single")
        svc.run(sid, auto_approve=True, until=2)
    root = tmp_path / "sessions" / sid
    what = json.loads((root / "verifications" / "what.json").read_text())
    assert (what["status"], what["strategy"]) == ("passed", "single")
    assert calls_by_agent(root)["verifier-what"] == 1
