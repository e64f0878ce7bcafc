"""Unattended runs of the whole pipeline on the bundled local model, one idea after another.

Usage: ``.venv/bin/python benchmarks/local_e2e.py [--ideas a.md b.md …] [--json]``

Each idea runs as a user would run it: ``haytham run --idea-file IDEA --provider local
--auto-approve`` in a fresh process and a fresh sessions folder. For each run it prints the wall
time, whether the session reached ``done``, how many of the ten stages have an output, the model
calls, the provider retries and re-asks, the stages that landed ``needs_attention``, and at the end
the median wall time. Default ideas: the five in :data:`DEFAULT_IDEAS` (Power of 8 and four others).
The machine's load average is printed before each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IDEAS = ROOT / "tests" / "fixtures" / "ideas"
DEFAULT_IDEAS = (
    IDEAS / "power_of_8.md",
    IDEAS / "receipt_api.md",
    IDEAS / "changelog_cli.md",
    IDEAS / "home_cooks_marketplace.md",
    ROOT / "tests" / "fixtures" / "fidelity" / "test" / "ward_med_checker" / "idea.md",
)
STAGE_COUNT = 10


@dataclass
class RunReport:
    idea: str
    wall_s: float
    exit_code: int
    status: str
    stage_outputs: int
    model_calls: int
    reasks: int
    retries: int
    salvaged: int
    needs_attention: list[str] = field(default_factory=list)
    load_before: float = 0.0
    error: str = ""


def _events(session: Path) -> list[dict]:
    path = session / "events.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _cause(stderr: str) -> str:
    """The CLI's ``error: …`` sentence (its last line only says how to resume)."""
    lines = stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("error:")]
    return (errors or lines or [""])[-1]


def run_one(idea: Path, haytham: Path, timeout: float) -> RunReport:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="haytham-e2e-") as scratch:
        sessions = Path(scratch) / "sessions"
        command = [str(haytham), "run", "--idea-file", str(idea), "--provider", "local"]
        command += ["--auto-approve", "--skip-intake", "--sessions-dir", str(sessions)]
        began = time.perf_counter()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
            code, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired:
            code, stderr = 124, f"timed out after {timeout:.0f} s"
        wall = time.perf_counter() - began
        folders = [p for p in sessions.iterdir() if p.is_dir() and not p.name.startswith("_")]
        session = folders[0] if folders else sessions
        events = _events(session)
        state = {}
        if (session / "summary.json").is_file():
            state = json.loads((session / "summary.json").read_text(encoding="utf-8"))
        outputs = sorted((session / "stages").glob("*/output.json"))
        attention = []
        for out in outputs:
            record = json.loads(out.read_text(encoding="utf-8"))
            if record.get("status") == "needs_attention":
                attention.append(out.parent.name)
        calls = [e for e in events if e.get("type") == "model_call"]
        return RunReport(
            idea=idea.stem if idea.stem != "idea" else idea.parent.name,
            wall_s=round(wall, 1),
            exit_code=code,
            status=str(state.get("status", "unknown")),
            stage_outputs=len(outputs),
            model_calls=len(calls),
            reasks=sum(e.get("type") == "stage_reask" for e in events),
            retries=sum(int((e.get("data") or {}).get("retries", 0)) for e in calls),
            salvaged=sum(e.get("type") == "stage_salvaged" for e in events),
            needs_attention=attention,
            load_before=round(load, 2),
            error="" if code == 0 else _cause(stderr),
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ideas", nargs="*", type=Path, default=list(DEFAULT_IDEAS))
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    haytham = Path(sys.executable).parent / "haytham"
    reports = []
    for idea in args.ideas:
        report = run_one(idea, haytham, args.timeout)
        reports.append(report)
        if not args.json:
            print(
                f"{report.idea:<24} {report.wall_s:>7.1f} s  status={report.status:<10} "
                f"outputs={report.stage_outputs}/{STAGE_COUNT} calls={report.model_calls} "
                f"reasks={report.reasks} retries={report.retries} "
                f"salvaged={report.salvaged} attention={','.join(report.needs_attention) or '-'} "
                f"load={report.load_before}" + (f"  error: {report.error}" if report.error else ""),
                flush=True,
            )
    median = statistics.median(r.wall_s for r in reports) if reports else 0.0
    finished = sum(r.status == "done" and r.stage_outputs == STAGE_COUNT for r in reports)
    if args.json:
        print(json.dumps({"runs": [asdict(r) for r in reports], "median_s": median}, indent=1))
    else:
        print(
            f"median {median / 60:.1f} min; {finished}/{len(reports)} reached done with ten outputs"
        )
    return 0 if finished == len(reports) else 1


if __name__ == "__main__":
    sys.exit(main())
