"""Shared helpers for pipeline tests: replay settings, cassette assembly, prompt capture."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from haytham.config import Settings, load_settings

FIXTURES = Path(__file__).parent / "fixtures"
POWER8 = FIXTURES / "cassettes" / "power_of_8"
POWER8_IDEA = (FIXTURES / "ideas" / "power_of_8.md").read_text(encoding="utf-8")
# A faithful full run: the stages (pipeline.jsonl) plus passing verifiers (verify/clean.jsonl).
POWER8_RUN = POWER8 / "full"


def replay_settings(
    tmp_path: Path,
    cassette: Path = POWER8_RUN,
    env: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Replay settings isolated from the machine: only ``env`` (variables by their documented
    names, e.g. ``{"HAYTHAM_VERIFY_WHAT": "off"}``) is read; embeddings are off unless ``env``
    turns them on (each run would load the model), like the suite-wide default in conftest; intake
    is off too (the recorded cassettes have no intake turn) unless ``env`` turns it on."""
    return load_settings(
        env={"HAYTHAM_EMBEDDINGS": "off", "HAYTHAM_INTAKE": "off", **(env or {})},
        dotenv=None,
        provider="replay",
        cassette=cassette,
        sessions_dir=tmp_path / "sessions",
        retry_base_delay=0.0,
        **overrides,
    )


def replay_cli_args(tmp_path: Path, cassette: Path = POWER8_RUN) -> list[str]:
    """The CLI options for a replay run with ``cassette`` and sessions under ``tmp_path``."""
    return [
        "--provider",
        "replay",
        "--cassette",
        str(cassette),
        "--sessions-dir",
        str(tmp_path / "sessions"),
    ]


def cassette_with(
    tmp_path: Path,
    *replacements: Path,
    drop_agents: set[str] = frozenset(),
    passing_verifiers: bool = False,
) -> Path:
    """pipeline.jsonl (plus verify/clean.jsonl when ``passing_verifiers``) without
    ``drop_agents`` lines, plus the lines of ``replacements``."""
    names = ["pipeline.jsonl"] + (["verify/clean.jsonl"] if passing_verifiers else [])
    lines = [
        ln
        for name in names
        for ln in (POWER8 / name).read_text().splitlines()
        if ln.strip() and json.loads(ln)["agent"] not in drop_agents
    ]
    for extra in replacements:
        lines += [ln for ln in extra.read_text().splitlines() if ln.strip()]
    out = tmp_path / "cassette.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def _blocks_text(messages: Any) -> str:
    return "\n".join(
        block.get("text", "")
        for m in messages or []
        for block in m.get("content", [])
        if isinstance(block, dict)
    )


def capture_prompts(monkeypatch) -> list[dict[str, Any]]:
    """Record every request the replay model receives, at the model layer: stages, anchor
    extraction, intake, input validators, phase verifiers, every swarm agent, change requests and
    judges alike (whoever builds the model). Returns the list the calls are appended to, in call
    order: ``{"agent", "system", "text"}`` (``text``: the messages' text blocks)."""
    from haytham.models.replay import ReplayModel

    log: list[dict[str, Any]] = []
    real_stream, real_structured = ReplayModel.stream, ReplayModel.structured_output

    def record(model: ReplayModel, messages: Any, system_prompt: str | None) -> None:
        log.append(
            {"agent": model.agent, "system": system_prompt or "", "text": _blocks_text(messages)}
        )

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kw) -> AsyncIterator:
        record(self, messages, system_prompt)
        async for event in real_stream(self, messages, tool_specs, system_prompt, **kw):
            yield event

    async def structured_output(self, output_model, prompt, system_prompt=None, **kw):
        record(self, prompt, system_prompt)
        async for event in real_structured(self, output_model, prompt, system_prompt, **kw):
            yield event

    monkeypatch.setattr(ReplayModel, "stream", stream)
    monkeypatch.setattr(ReplayModel, "structured_output", structured_output)
    return log


def one_sentence(err: str) -> str:
    """The CLI's one error line (no traceback, ``error: …``, ending with a full stop)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and lines[0].rstrip().endswith("."), err
    return lines[0]


def made_sessions(sessions: Path) -> list[Path]:
    """The session folders under ``sessions`` (Burr's ``_tracking`` left out)."""
    return [p for p in sessions.iterdir() if p.name[0] != "_"] if sessions.exists() else []


def refused_run(tmp_path: Path, capsys: Any, argv: list[str], cassette: Path | None = None) -> str:
    """``haytham run ARGV`` on replay: exit 2, one sentence, no session created; the sentence."""
    from haytham.cli import main

    args = replay_cli_args(tmp_path, cassette) if cassette else replay_cli_args(tmp_path)
    capsys.readouterr()
    code = main(["run", *argv, "--quiet", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not made_sessions(tmp_path / "sessions")
    return one_sentence(err)
