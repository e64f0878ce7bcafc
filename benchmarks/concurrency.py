"""Concurrent sessions: N sessions run at once through ONE ``Haytham`` service (threads).

Each session gets its own idea text (the Power of 8 idea plus a unique marker line) and runs
end to end with ``--auto-approve`` on the replay provider, with the phase verifiers on (the
service as ``haytham`` and the UI build it). Reported: wall time, sessions/s,
model calls/s and per-session latency (p50 / p95 / max). Then every session is checked:

* complete: ten stage envelopes, the anchor, four approved gates, ``summary.json`` done,
  every JSON file and every ``events.jsonl`` line parses, no temp file is left;
* its own: ``idea.md``, ``session.json``, the Burr state and its Burr tracking log carry its
  idea and its session id — and no other session's marker appears anywhere in its folder.

    .venv/bin/python benchmarks/concurrency.py [--sessions 20] [--workers 20] [--keep DIR]

Exit code 0 when every session passed its checks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haytham.app import make_service  # noqa: E402
from haytham.config import load_settings  # noqa: E402
from haytham.stages import ANCHOR_AGENT, STAGES  # noqa: E402
from haytham.storage.folder import SessionStore  # noqa: E402

CASSETTE = ROOT / "tests/fixtures/cassettes/power_of_8/full"  # stages + passing verifiers
BASE_IDEA = (ROOT / "tests/fixtures/ideas/power_of_8.md").read_text(encoding="utf-8").strip()


def idea_for(n: int) -> str:
    return f"{BASE_IDEA}\n\nReference for this request: concurrency-marker-{n:03d}."


def marker(n: int) -> str:
    return f"concurrency-marker-{n:03d}"


@dataclass
class Report:
    sessions: int
    workers: int
    wall_s: float
    latencies_s: list[float]
    model_calls: int
    problems: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        lat = sorted(self.latencies_s)
        p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))] if lat else 0.0
        return {
            "sessions": self.sessions,
            "workers": self.workers,
            "wall_s": round(self.wall_s, 2),
            "sessions_per_s": round(self.sessions / self.wall_s, 2),
            "model_calls": self.model_calls,
            "model_calls_per_s": round(self.model_calls / self.wall_s, 1),
            "latency_s": {
                "p50": round(statistics.median(lat), 2) if lat else 0.0,
                "p95": round(p95, 2),
                "max": round(max(lat, default=0.0), 2),
            },
            "sessions_ok": self.sessions - len(self.problems) - len(self.errors),
            "errors": self.errors,
            "problems": self.problems,
        }


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def check_session(sessions: Path, sid: str, n: int, total: int) -> list[str]:
    """What is wrong with session ``sid`` (empty when complete and its own)."""

    from haytham.state import SessionState
    from haytham.storage.folder import sqlite_persister as persister
    from haytham.storage.protocol import PARTITION

    root, idea, problems = sessions / sid, idea_for(n), []
    if (root / "idea.md").read_text(encoding="utf-8") != idea + "\n":
        problems.append("idea.md is not this session's idea")
    if _json(root / "session.json").get("session_id") != sid:
        problems.append("session.json names another session")
    loaded = persister(str(root / "state.db")).load(PARTITION, sid)
    state = SessionState.of(loaded["state"]) if loaded else SessionState()
    if (state.idea, state.session_id, state.status) != (idea, sid, "done"):
        problems.append("the Burr state is not this session's finished state")
    for spec in STAGES:
        path = root / "stages" / spec.dir_name / "output.json"
        if not path.exists() or _json(path).get("stage") != spec.slug:
            problems.append(f"{spec.slug}: output.json missing or wrong")
    if not (root / "concept_anchor.json").exists():
        problems.append("concept_anchor.json missing")
    gates = _json(root / "gates.json")
    if sorted(gates) != ["1", "2", "3", "4"] or any(
        g["status"] != "approved" for g in gates.values()
    ):
        problems.append("not every gate is approved")
    if _json(root / "summary.json").get("status") != "done":
        problems.append("summary.json is not done")
    events = [json.loads(x) for x in (root / "events.jsonl").read_text().splitlines() if x]
    expected = [ANCHOR_AGENT, *(s.slug for s in STAGES)]
    starts = [e["stage"] for e in events if e["type"] == "stage_started" and e["stage"] in expected]
    if sorted(starts) != sorted(expected):  # each stage exactly once
        problems.append(f"unexpected stage runs: {starts}")
    problems += [f"temp file left: {p.name}" for p in root.rglob("*.tmp")]
    for path in root.rglob("*.json"):
        _json(path)
    others = [marker(m) for m in range(total) if m != n]
    for path in [p for p in root.rglob("*") if p.is_file() and p.name != "state.db"]:
        text = path.read_text(encoding="utf-8", errors="replace")
        problems += [f"{path.name} holds {o}" for o in others if o in text]
    log = SessionStore(sessions).tracking_dir / "haytham" / sid / "log.jsonl"
    tracked = log.read_text(encoding="utf-8") if log.exists() else ""
    if marker(n) not in tracked or any(o in tracked for o in others):
        problems.append("the Burr tracking log is missing or holds another session")
    return problems


def run(sessions_dir: Path, n_sessions: int = 20, workers: int = 20) -> Report:
    settings = load_settings(
        env={},
        dotenv=None,
        provider="replay",
        cassette=CASSETTE,
        sessions_dir=sessions_dir,
        retry_base_delay=0.0,
    )
    latencies: list[float] = []
    errors: dict[str, str] = {}

    def one(n: int) -> None:
        sid = f"bench-{n:03d}"
        began = time.perf_counter()
        try:
            svc.create_session(idea_for(n), session_id=sid, skip_intake=True)
            out = svc.run(sid, auto_approve=True)
            if out.status != "done":
                errors[sid] = f"ended {out.status}"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            errors[sid] = f"{type(exc).__name__}: {exc}"
        latencies.append(time.perf_counter() - began)

    with make_service(settings) as svc:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, range(n_sessions)))
        wall = time.perf_counter() - started
    calls = 0
    problems: dict[str, list[str]] = {}
    for n in range(n_sessions):
        sid = f"bench-{n:03d}"
        if sid in errors:
            continue
        root = sessions_dir / sid
        calls += sum(
            1
            for x in (root / "events.jsonl").read_text().splitlines()
            if '"type":"model_call"' in x
        )
        found = check_session(sessions_dir, sid, n, n_sessions)
        if found:
            problems[sid] = found
    return Report(n_sessions, workers, wall, latencies, calls, problems, errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "sessions"
        report = run(folder, args.sessions, args.workers).as_dict()
    print(json.dumps(report, indent=2))
    ok = report["sessions_ok"] == args.sessions
    print(
        f"{report['sessions']} sessions, {report['workers']} threads: {report['wall_s']} s, "
        f"{report['sessions_per_s']} sessions/s, {report['model_calls_per_s']} model calls/s; "
        f"{'every session complete and its own' if ok else 'PROBLEMS FOUND'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
