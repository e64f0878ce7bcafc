"""Replay provider: structured output, tool loops, swarms, misses, determinism, record -> replay."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import replay_settings
from pydantic import BaseModel, Field
from strands import Agent, tool
from strands.models import Model
from strands.multiagent import Status, Swarm

from haytham.config import Settings
from haytham.errors import CassetteMiss, ConfigError
from haytham.models.accounting import AccountedModel, ModelCall
from haytham.models.factory import ModelRuntime, build_model
from haytham.models.recording import RecordingModel
from haytham.models.replay import request_hash, response_events


class Verdict(BaseModel):
    label: str
    score: float = Field(ge=0, le=1)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def write_cassette(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def make_agent(
    settings: Settings,
    name: str,
    *,
    runtime: ModelRuntime | None = None,
    calls: list[ModelCall] | None = None,
    **kwargs: Any,
) -> Agent:
    model = build_model(
        settings,
        "heavy",
        name,
        on_call=calls.append if calls is not None else None,
        runtime=runtime,
    )
    return Agent(name=name, model=model, callback_handler=None, retry_strategy=None, **kwargs)


def test_structured_output_returns_validated_instance(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {
                "agent": "critic",
                "turn": 1,
                "response": [
                    {"text": "Judging."},
                    {"tool": "Verdict", "input": {"label": "good", "score": 0.8}},
                ],
            }
        ],
    )
    calls: list[ModelCall] = []
    agent = make_agent(replay_settings(tmp_path, cassette, max_retries=0), "critic", calls=calls)
    result = agent("Rate: dog walking app", structured_output_model=Verdict)
    assert result.structured_output == Verdict(label="good", score=0.8)
    assert len(calls) == 1
    call = calls[0]
    assert (call.provider, call.model_id, call.tier, call.agent, call.ok) == (
        "replay",
        "replay",
        "heavy",
        "critic",
        True,
    )
    assert call.input_tokens > 0 and call.output_tokens > 0  # estimated, never zero


def test_structured_output_invalid_then_valid_gets_second_turn(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {
                "agent": "critic",
                "turn": 1,
                "response": [{"tool": "Verdict", "input": {"label": "x", "score": 7}}],
            },
            {
                "agent": "critic",
                "turn": 2,
                "when": ["Validation failed"],
                "response": [{"tool": "Verdict", "input": {"label": "x", "score": 0.5}}],
            },
        ],
    )
    agent = make_agent(replay_settings(tmp_path, cassette, max_retries=0), "critic")
    assert agent("rate", structured_output_model=Verdict).structured_output == Verdict(
        label="x", score=0.5
    )


def test_tool_loop_and_usage_items(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {
                "agent": "calc",
                "turn": 1,
                "response": [{"tool": "add", "input": {"a": 2, "b": 3}}],
            },
            {
                "agent": "calc",
                "turn": 2,
                "when": ["5"],
                "response": [{"text": "The sum is 5."}, {"usage": {"input": 11, "output": 4}}],
            },
        ],
    )
    calls: list[ModelCall] = []
    agent = make_agent(
        replay_settings(tmp_path, cassette, max_retries=0), "calc", calls=calls, tools=[add]
    )
    result = agent("What is 2 + 3?")
    assert str(result).strip() == "The sum is 5."
    assert result.stop_reason == "end_turn"
    tool_results = [
        block["toolResult"]
        for message in agent.messages
        for block in message["content"]
        if "toolResult" in block
    ]
    assert tool_results[0]["content"][0]["text"] == "5"
    assert [(c.input_tokens, c.output_tokens) for c in calls][1] == (11, 4)


def test_swarm_of_two_agents_hands_off(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "swarm.jsonl",
        [
            {
                "agent": "researcher",
                "turn": 1,
                "response": [
                    {"text": "Passing on."},
                    {
                        "tool": "handoff_to_agent",
                        "input": {
                            "agent_name": "writer",
                            "message": "write it up",
                            "context": {"facts": ["dogs"]},
                        },
                    },
                ],
            },
            {"agent": "researcher", "turn": 2, "response": [{"text": "handed off"}]},
            {
                "agent": "writer",
                "turn": 1,
                "when": ["write it up", "dogs"],
                "response": [{"text": "Final draft about dogs."}],
            },
        ],
    )
    settings = replay_settings(tmp_path, cassette, max_retries=0)
    calls: list[ModelCall] = []
    with ModelRuntime(settings) as runtime:
        swarm = Swarm(
            [
                make_agent(settings, "researcher", runtime=runtime, calls=calls),
                make_agent(settings, "writer", runtime=runtime, calls=calls),
            ],
            max_handoffs=5,
            max_iterations=5,
        )
        result = swarm("Write about a dog walking app.")
    assert result.status == Status.COMPLETED
    assert [node.node_id for node in result.node_history] == ["researcher", "writer"]
    assert "Final draft about dogs." in str(result.results["writer"].result)
    assert [c.agent for c in calls] == ["researcher", "researcher", "writer"]


def test_miss_names_agent_turn_and_excerpt(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl", [{"agent": "other", "turn": 1, "response": [{"text": "x"}]}]
    )
    calls: list[ModelCall] = []
    agent = make_agent(replay_settings(tmp_path, cassette, max_retries=0), "critic", calls=calls)
    with pytest.raises(CassetteMiss) as info:
        agent("Please rate the idea about dog walking")
    message = str(info.value)
    assert "'critic'" in message and "turn 1" in message
    assert "Please rate the idea about dog walking" in message
    assert info.value.retryable is False
    assert len(calls) == 1 and calls[0].ok is False and calls[0].retries == 0


def test_most_when_conditions_win_and_ties_go_to_first(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {"agent": "a", "turn": 1, "response": [{"text": "generic"}]},
            {"agent": "a", "turn": 1, "when": ["dog"], "response": [{"text": "dog-1"}]},
            {"agent": "a", "turn": 1, "when": ["walk"], "response": [{"text": "walk-1"}]},
            {"agent": "a", "turn": 1, "when": ["dog", "walk"], "response": [{"text": "both"}]},
            {
                "agent": "a",
                "turn": 1,
                "when": ["cat"],
                "request_hash": "0" * 64,
                "response": [{"text": "never"}],
            },
        ],
    )
    settings = replay_settings(tmp_path, cassette, max_retries=0)
    assert str(make_agent(settings, "a")("hello")).strip() == "generic"
    assert str(make_agent(settings, "a")("a dog")).strip() == "dog-1"
    assert str(make_agent(settings, "a")("dog walk")).strip() == "both"
    assert str(make_agent(settings, "a")("a cat")).strip() == "generic"  # hash must match


def test_cassette_folder_loads_all_files_and_bad_lines_fail(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    write_cassette(
        folder / "a.jsonl", [{"agent": "a", "turn": 1, "response": [{"text": "from a"}]}]
    )
    write_cassette(
        folder / "b.jsonl", [{"agent": "b", "turn": 1, "response": [{"text": "from b"}]}]
    )
    settings = replay_settings(tmp_path, folder, max_retries=0)
    assert str(make_agent(settings, "b")("hi")).strip() == "from b"
    (folder / "c.jsonl").write_text('{"agent": "c", "turn": 0, "response": []}\n')
    with pytest.raises(ConfigError, match=r"c\.jsonl:1"):
        make_agent(settings, "a")
    (folder / "c.jsonl").write_text('{"agent": "c", "turn": 1, "response": [{"txt": "typo"}]}\n')
    with pytest.raises(ConfigError, match="bad response item"):
        make_agent(settings, "a")


RESUME_SCRIPT = textwrap.dedent(
    """
    import sys
    from strands import Agent
    from haytham.config import Settings
    from haytham.models.factory import build_model
    settings = Settings(provider="replay", cassette=sys.argv[1], max_retries=0)
    history = [
        {"role": "user", "content": [{"text": "first question"}]},
        {"role": "assistant", "content": [{"text": "answer one"}]},
        {"role": "user", "content": [{"text": "second question"}]},
        {"role": "assistant", "content": [{"text": "answer two"}]},
    ]
    agent = Agent(name="analyst", model=build_model(settings, "light", "analyst"), messages=history,
                  callback_handler=None, retry_strategy=None)
    print(str(agent("third question")).strip())
    """
)


def test_turn_matching_is_deterministic_across_processes(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {"agent": "analyst", "turn": n, "response": [{"text": f"turn {n} answer"}]}
            for n in (1, 2, 3, 4)
        ],
    )
    script = tmp_path / "resume.py"
    script.write_text(RESUME_SCRIPT, encoding="utf-8")
    outputs = {
        subprocess.run(
            [sys.executable, str(script), str(cassette)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        for _ in range(2)
    }
    assert outputs == {"turn 3 answer"}


class ScriptedModel(Model):
    """A stand-in for a real provider: plays a script, with random tool-use ids like real ones."""

    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = list(script)
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        for event in response_events(self.script.pop(0), 1, 9):
            start = event.get("contentBlockStart", {}).get("start", {})
            if "toolUse" in start:
                start["toolUse"]["toolUseId"] = f"tooluse_{uuid.uuid4().hex}"
            yield event

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield


def test_record_then_replay_reproduces_the_run(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.jsonl"
    script = [
        [{"text": "Let me add."}, {"tool": "add", "input": {"a": 2, "b": 3}}],
        [{"text": "It is 5."}],
        [{"tool": "Verdict", "input": {"label": "fine", "score": 0.25}}],
    ]
    inner = RecordingModel(ScriptedModel(script), "calc", recorded)
    live_model = AccountedModel(
        inner, provider="scripted", model_id="scripted", tier="heavy", agent="calc"
    )
    live = Agent(
        name="calc",
        model=live_model,
        tools=[add],
        callback_handler=None,
        retry_strategy=None,
        system_prompt="You add numbers.",
    )
    live_text = str(live("What is 2 + 3?")).strip()
    live_verdict = live("Judge that.", structured_output_model=Verdict).structured_output

    lines = [json.loads(line) for line in recorded.read_text().splitlines()]
    assert [(line["agent"], line["turn"]) for line in lines] == [
        ("calc", 1),
        ("calc", 2),
        ("calc", 3),
    ]
    assert all(len(line["request_hash"]) == 64 for line in lines)
    assert lines[0]["response"][1] == {"tool": "add", "input": {"a": 2, "b": 3}}

    replay = make_agent(
        replay_settings(tmp_path, recorded, max_retries=0),
        "calc",
        tools=[add],
        system_prompt="You add numbers.",
    )
    assert str(replay("What is 2 + 3?")).strip() == live_text == "It is 5."
    assert replay("Judge that.", structured_output_model=Verdict).structured_output == live_verdict
    changed = make_agent(
        replay_settings(tmp_path, recorded, max_retries=0),
        "calc",
        tools=[add],
        system_prompt="Changed prompt.",
    )
    with pytest.raises(CassetteMiss):
        changed("What is 2 + 3?")


def test_request_hash_ignores_tool_use_ids() -> None:
    def conversation(tool_id: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": [{"text": "q"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": tool_id, "name": "add", "input": {"a": 1}}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": tool_id,
                            "status": "success",
                            "content": [{"text": "1"}],
                        }
                    }
                ],
            },
        ]

    assert request_hash(conversation("a"), "s") == request_hash(conversation("b"), "s")  # type: ignore[arg-type]
    assert request_hash(conversation("a"), "s") != request_hash(conversation("a"), "t")  # type: ignore[arg-type]


def test_legacy_structured_output_api(tmp_path: Path) -> None:
    cassette = write_cassette(
        tmp_path / "c.jsonl",
        [
            {
                "agent": "critic",
                "turn": 1,
                "response": [{"tool": "Verdict", "input": {"label": "ok", "score": 1}}],
            }
        ],
    )
    agent = make_agent(replay_settings(tmp_path, cassette, max_retries=0), "critic")
    with pytest.warns(DeprecationWarning):
        assert agent.structured_output(Verdict, "rate") == Verdict(label="ok", score=1.0)
