"""Stage knowledge lives with the stages: no module outside ``haytham/stages/`` spells a stage's
slug or action name; everything else names a stage through its spec."""

from __future__ import annotations

import re
from pathlib import Path

from haytham.stages import ANCHOR_ACTION, ANCHOR_AGENT, STAGES

ROOT = Path(__file__).resolve().parent.parent
NAMES = [s.slug for s in STAGES] + [s.action for s in STAGES] + [ANCHOR_AGENT, ANCHOR_ACTION]
QUOTED = re.compile("[\"'](" + "|".join(map(re.escape, NAMES)) + ")[\"']")


def test_no_stage_name_is_spelled_outside_the_stages_package() -> None:
    found = []
    for folder in ("haytham", "frontend_streamlit", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if (ROOT / "haytham" / "stages") in path.parents:
                continue
            for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
                if QUOTED.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
