"""Helpers for the verification tests: cassettes, a service with verifiers, event queries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline_helpers import POWER8, capture_prompts, cassette_with, replay_settings

from haytham.runs.service import Haytham
from haytham.verify.factory import make_verifier

VERIFY = POWER8 / "verify"
CLEAN = VERIFY / "clean.jsonl"
DRIFT = VERIFY / "drift.jsonl"
PINGPONG = VERIFY / "pingpong.jsonl"
RECEIVING = VERIFY / "receiving.jsonl"
DRIFTED_STAGES = frozenset(
    {"mvp-scope", "system-traits", "build-buy-analysis", "architecture-decisions"}
)


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def service(
    tmp_path: Path,
    *extra: Path,
    drop: frozenset[str] = frozenset(),
    verifiers: bool = True,
    env: Mapping[str, str] | None = None,
) -> Haytham:
    """A service on pipeline.jsonl (minus ``drop``) plus ``extra`` cassettes, with verifiers;
    ``env`` holds settings variables (``{"HAYTHAM_VERIFY_WHAT": "single"}``)."""
    cassette = cassette_with(tmp_path, *extra, drop_agents=set(drop))
    return Haytham(
        replay_settings(tmp_path, cassette=cassette, env=env),
        verifier_factory=make_verifier if verifiers else None,
        post_validator=None,  # these tests look at the verifiers alone
    )


def events(root: Path, kind: str | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (root / "events.jsonl").read_text().splitlines() if x.strip()]
    return [e for e in rows if kind is None or e["type"] == kind]


def calls_by_agent(root: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events(root, "model_call"):
        out[e["data"]["agent"]] = out.get(e["data"]["agent"], 0) + 1
    return out


def capture_all_prompts(monkeypatch) -> list[dict[str, Any]]:
    """Capture what every model (stages, single verifiers, swarm agents) was sent."""
    return capture_prompts(monkeypatch)
