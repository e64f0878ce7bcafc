"""LLM calls per full run with verifiers (no rework), counted per agent.

Runs the Power of 8 replay pipeline end to end (--auto-approve) with the default verification
strategies (WHY single, WHAT swarm, HOW single, STORIES swarm) on ``pipeline.jsonl`` plus
``verify/clean.jsonl`` (every verifier passes, every input item is accepted), then counts the
``model_call`` events of the session by agent.

Target (issue 4): at most 10 stages + 1 anchor + 2 single verifiers + 2 swarms of ≤ 4 agents
= 21 calls; receiving-stage validation adds one call per boundary (3) and is reported apart.

    .venv/bin/python benchmarks/verifier_calls.py [--no-input-validation] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.app import make_service  # noqa: E402
from haytham.config import load_settings  # noqa: E402
from haytham.stages import ANCHOR_AGENT, STAGES, Phase  # noqa: E402
from haytham.verify.config import VerifyConfig  # noqa: E402

CASSETTES = ROOT / "tests/fixtures/cassettes/power_of_8"
IDEA = (ROOT / "tests/fixtures/ideas/power_of_8.md").read_text(encoding="utf-8")
TARGET = 10 + 1 + 2 + 2 * 4


def group_of(agent: str) -> str:
    if agent in {s.slug for s in STAGES}:
        return "stages"
    if agent == ANCHOR_AGENT:
        return "anchor"
    if agent.endswith(("-input-validator", "-reviser")):
        return "input validation"
    if agent.count("-") >= 2 and agent.startswith("verifier-"):
        return f"swarm {agent.split('-')[1].upper()}"
    return "single verifiers"


def run(input_validation: bool) -> Counter[str]:
    with tempfile.TemporaryDirectory() as tmp:
        cassette = Path(tmp) / "cassette.jsonl"
        cassette.write_text(
            (CASSETTES / "pipeline.jsonl").read_text(encoding="utf-8")
            + (CASSETTES / "verify" / "clean.jsonl").read_text(encoding="utf-8")
        )
        settings = load_settings(
            env={"HAYTHAM_INPUT_VALIDATION": "on" if input_validation else "off"},
            dotenv=None,
            provider="replay",
            cassette=cassette,
            sessions_dir=Path(tmp) / "sessions",
        )
        with make_service(settings, tracking=False) as svc:
            sid = svc.create_session(IDEA, session_id="bench", skip_intake=True)
            outcome = svc.run(sid, auto_approve=True)
            if outcome.status != "done":
                raise SystemExit(f"the run ended {outcome.status}, not done")
            root = Path(tmp) / "sessions" / sid
            verifications = {
                p.stem: json.loads(p.read_text())["status"]
                for p in (root / "verifications").glob("*.json")
            }
            if set(verifications.values()) != {"passed"}:
                raise SystemExit(f"a verifier did not pass: {verifications}")
            lines = (root / "events.jsonl").read_text().splitlines()
    calls = [json.loads(x)["data"]["agent"] for x in lines if '"model_call"' in x]
    return Counter(calls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-input-validation", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = run(not args.no_input_validation)
    groups: Counter[str] = Counter()
    for agent, n in counts.items():
        groups[group_of(agent)] += n
    verify_and_pipeline = sum(n for g, n in groups.items() if g != "input validation")
    if args.json:
        print(
            json.dumps(
                {
                    "per_agent": dict(counts),
                    "per_group": dict(groups),
                    "total": sum(counts.values()),
                    "pipeline_and_verifiers": verify_and_pipeline,
                    "target": TARGET,
                }
            )
        )
        return 0 if verify_and_pipeline <= TARGET else 1
    config = VerifyConfig.from_settings(load_settings(env={}, dotenv=None))
    print("strategies: " + ", ".join(f"{p.value}={config.strategy(p)}" for p in Phase))
    print(f"{'agent':<42} calls")
    for agent, n in counts.items():
        print(f"  {agent:<40} {n}")
    print()
    for group, n in sorted(groups.items()):
        print(f"  {group:<40} {n}")
    print(
        f"\nstages + anchor + verifiers: {verify_and_pipeline} (target ≤ {TARGET}: "
        f"{'met' if verify_and_pipeline <= TARGET else 'MISSED'})"
    )
    print(f"with receiving-stage validation: {sum(counts.values())}")
    return 0 if verify_and_pipeline <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
