"""A session survives a killed process: resume re-runs only the interrupted stage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from pipeline_helpers import POWER8_IDEA, POWER8_RUN

from haytham.cli import main
from haytham.stages import STAGES

# The child is the real CLI; only its model for stage 6 is slowed down so we can kill it there.
CHILD = """
import sys, time
from pathlib import Path
import haytham.agents.caller as caller
real = caller.build_model
def build(settings, tier, agent, **kw):
    if agent == "capability-model":
        Path(sys.argv[1]).write_text("in stage 6")
        time.sleep(120)
    return real(settings, tier, agent, **kw)
caller.build_model = build
from haytham.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_kill_during_stage_6_then_resume_reruns_only_stage_6(tmp_path):
    sessions = tmp_path / "sessions"
    opts = ["--provider", "replay", "--cassette", str(POWER8_RUN), "--sessions-dir", str(sessions)]
    idea = tmp_path / "idea.md"
    idea.write_text(POWER8_IDEA)
    marker = tmp_path / "marker"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(marker),
            "run",
            "--idea-file",
            str(idea),
            "--session-id",
            "killed",
            "--auto-approve",
            *opts,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), child.stderr.read().decode() if child.poll() is not None else "timeout"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)

    root = sessions / "killed"
    assert (root / "stages" / "05-mvp-scope" / "output.json").exists()
    assert not (root / "stages" / "06-capability-model").exists()
    assert main(["resume", "killed", "--auto-approve", *opts]) == 0

    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    started = Counter(e["stage"] for e in events if e["type"] == "stage_started")
    for spec in STAGES[:5]:
        assert started[spec.slug] == 1, spec.slug
    assert started["anchor-extraction"] == 1
    assert started["capability-model"] == 2  # the interrupted run and the resumed one
    summary = json.loads((root / "summary.json").read_text())
    assert summary["status"] == "done"
    for spec in STAGES:
        assert (root / "stages" / spec.dir_name / "output.json").exists()
