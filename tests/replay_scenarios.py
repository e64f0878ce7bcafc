"""A set of replay sessions in one sessions folder, each at a different point (no tests here).

Shared by the plain-language test and the history/panel agreement test (issue 28). Every
session replays the Power of 8 recording (hand-written fixtures where noted):

- ``gate1``: waiting at Gate 1, verifiers passing;
- ``nogo``: waiting at Gate 1 with a NO-GO verdict and no verifier turns (the verification is
  inconclusive, so Gate 1 holds ambiguities, the NO-GO and the verification as blockers);
- ``overridden``: the ``nogo`` recording run to the end with every gate auto-approved, so each
  blocker (the NO-GO, the inconclusive verifications, failed checks) is an automatic override;
- ``gate3``: Gates 1–2 approved, waiting at Gate 3;
- ``changed``: a change request to the MVP scope accepted at Gate 2 (the scripted change agent of
  ``test_revise``), re-run back to Gate 2;
- ``done``: every gate approved;
- ``fork``: a fork of ``done`` from the MVP scope, waiting at Gate 2.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_settings
from test_revise import REQUEST, _change_cassette

from haytham.app import make_service

SCENARIOS = ("gate1", "nogo", "overridden", "gate3", "changed", "done", "fork")


def no_go_unverified(tmp_path: Path) -> Path:
    """pipeline.jsonl (no verifier turns) with the validation summary's first knockout failed."""
    folder = tmp_path / "no_go"
    folder.mkdir(exist_ok=True)
    lines = []
    for line in (POWER8 / "pipeline.jsonl").read_text("utf-8").splitlines():
        entry = json.loads(line) if line.strip() else None
        if entry and entry["agent"] == "validation-summary":
            for item in entry["response"]:
                if "input" in item:
                    item["input"]["payload"]["knockout_criteria"][0]["passed"] = False
            lines.append(json.dumps(entry))
    summary = folder / "validation_summary.jsonl"
    summary.write_text("\n".join(lines) + "\n", "utf-8")
    out = cassette_with(folder, summary, drop_agents={"validation-summary"})
    return out


def build_scenarios(root: Path) -> dict[str, str]:
    """Create every scenario's session under ``root / "sessions"``; returns name -> session id.
    The change-request cassette (the full run, verifiers and the change agent) is returned as
    ``root / "cassette.jsonl"`` for pages that need one."""
    full = _change_cassette(root)
    with make_service(replay_settings(root, cassette=full)) as svc:
        svc.create_session(POWER8_IDEA, session_id="gate1")
        assert svc.run("gate1").gate == 1
        svc.create_session(POWER8_IDEA, session_id="gate3")
        assert svc.run("gate3", auto_approve=True, until=3).gate == 3
        svc.create_session(POWER8_IDEA, session_id="changed")
        assert svc.run("changed", auto_approve=True, until=2).gate == 2
        proposal = svc.propose_change("changed", "mvp-scope", REQUEST)
        assert svc.apply_change("changed", proposal).gate == 2
        svc.create_session(POWER8_IDEA, session_id="done")
        assert svc.run("done", auto_approve=True).gate is None
        fork = svc.fork("done", "mvp-scope", new_id="fork")
        assert svc.run(fork).gate == 2
    with make_service(replay_settings(root, cassette=no_go_unverified(root))) as svc:
        svc.create_session(POWER8_IDEA, session_id="nogo")
        assert svc.run("nogo").gate == 1
        svc.create_session(POWER8_IDEA, session_id="overridden")
        assert svc.run("overridden", auto_approve=True).gate is None
    return {name: name for name in SCENARIOS}
