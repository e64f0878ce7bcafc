"""Change requests after Gate 1: proposed as a diff, applied as a revision on the record, and
the later stages re-run and re-verified through the normal pipeline."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import GateError, InputError
from haytham.export import export
from haytham.pipeline.staleness import stale_checks

REQUEST = "Send reminders by SMS instead of email."


def _scope_answer() -> dict:
    line = next(
        json.loads(x)
        for x in (POWER8 / "pipeline.jsonl").read_text().splitlines()
        if x.strip() and json.loads(x)["agent"] == "mvp-scope"
    )
    return line["response"][-1]["input"]


def _change_cassette(tmp_path: Path, breaks: list[str] | None = None) -> Path:
    """The scripted change agent: SCOPE-1 retitled, one item added (a test fixture)."""
    revised = copy.deepcopy(_scope_answer())
    items = revised["payload"]["in_scope"]
    items[0]["title"] = items[0]["title"] + " (SMS reminders)"
    items.append({"id": "SCOPE-99", "title": "SMS reminder before each circle", "carries": []})
    answer = {
        "revised": revised,
        "why": "Reminders go out by SMS, which patients read.",
        "invariants_touched": ["INV-1"],
        "breaks": breaks or [],
    }
    line = {
        "agent": "change-request",
        "turn": 1,
        "response": [{"tool": "MvpScopeOutputChange", "input": answer}],
    }
    extra = tmp_path / "change.jsonl"
    extra.write_text(json.dumps(line) + "\n")
    full = POWER8 / "full"
    cassette = cassette_with(tmp_path, extra, passing_verifiers=True)
    if full.is_dir():
        lines = [cassette.read_text()] + [p.read_text() for p in sorted(full.glob("*.jsonl"))]
        cassette.write_text("".join(x if x.endswith("\n") else x + "\n" for x in lines))
    return cassette


def _at_gate_2(tmp_path: Path, cassette: Path):
    svc = make_service(replay_settings(tmp_path, cassette=cassette))
    sid = svc.create_session(POWER8_IDEA)
    assert svc.run(sid, auto_approve=True, until=2).gate == 2
    return svc, sid


def test_a_change_is_proposed_as_a_diff_and_changes_nothing_until_applied(tmp_path) -> None:
    svc, sid = _at_gate_2(tmp_path, _change_cassette(tmp_path))
    with svc:
        before = svc.load_state(sid)
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        assert svc.load_state(sid) == before  # a proposal changes nothing
    kinds = {(c.kind, c.where.split("[")[0]) for c in proposal.changes}
    assert ("changed", "in_scope") in kinds and ("added", "in_scope") in kinds
    added = next(c for c in proposal.changes if c.kind == "added")
    assert "SCOPE-99" in added.where and "SMS reminder" in added.after
    assert proposal.invariants_touched == ["INV-1"] and proposal.breaks == []


def test_an_applied_change_is_a_revision_and_the_later_stages_rerun_and_reverify(
    tmp_path,
) -> None:
    svc, sid = _at_gate_2(tmp_path, _change_cassette(tmp_path))
    root = tmp_path / "sessions" / sid
    with svc:
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        runs_before = _runs(root, "capability-model")
        outcome = svc.apply_change(sid, proposal)
        state = svc.load_state(sid)
    assert outcome.gate == 2  # capability-model re-ran, the WHAT verifier ran, the gate reopened
    assert _runs(root, "capability-model") == runs_before + 1
    titles = [i.title for i in state.outputs["mvp-scope"].payload.in_scope]
    assert any("SMS reminder" in t for t in titles)
    (revision,) = state.revisions
    assert revision.request == REQUEST and revision.stage == "mvp-scope" and revision.changes
    assert state.gates[2].status == "open" and state.gates[2].round == 1  # a fresh gate visit
    assert state.verifications["WHAT"].status in ("passed", "failed", "inconclusive")
    # the revised output was checked as it is now: no check of the session is stale
    assert stale_checks(state) == [] and state.stage_meta["mvp-scope"].checked is not None
    assert json.loads((root / "revisions.json").read_text())[0]["request"] == REQUEST
    markdown = export(state, "markdown")
    assert "## Change requests" in markdown and REQUEST in markdown
    assert json.loads(export(state, "json"))["revisions"][0]["stage"] == "mvp-scope"


def _runs(root: Path, stage: str) -> int:
    events = [json.loads(x) for x in (root / "events.jsonl").read_text().splitlines() if x]
    return sum(1 for e in events if e["type"] == "stage_started" and e["stage"] == stage)


def test_a_change_that_breaks_an_invariant_needs_the_anchor_changed_first(tmp_path) -> None:
    svc, sid = _at_gate_2(tmp_path, _change_cassette(tmp_path, breaks=["INV-1"]))
    with svc:
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        assert proposal.breaks == ["INV-1"]
        before = svc.load_state(sid)
        with pytest.raises(GateError, match="would break INV-1; nothing was applied"):
            svc.apply_change(sid, proposal)
        assert svc.load_state(sid) == before


def test_requests_before_gate_1_or_on_the_anchor_source_are_refused(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)  # waiting at Gate 1
        with pytest.raises(GateError, match="after Gate 1 is approved"):
            svc.propose_change(sid, "market-context", REQUEST)
        with pytest.raises(InputError, match="empty"):
            svc.propose_change(sid, "market-context", "   ")
    svc, sid = _at_gate_2(tmp_path / "second", _change_cassette(tmp_path))
    with svc, pytest.raises(InputError, match="change the anchor at Gate 1"):
        svc.propose_change(sid, "idea-analysis", REQUEST)


def test_the_cli_shows_the_diff_and_applies_only_with_yes(tmp_path, capsys) -> None:
    cassette = _change_cassette(tmp_path)
    svc, sid = _at_gate_2(tmp_path, cassette)
    svc.close()
    opts = replay_cli_args(tmp_path, cassette)
    capsys.readouterr()
    assert main(["revise", sid, "mvp-scope", REQUEST, "--quiet", *opts]) == 0
    out = capsys.readouterr().out
    assert "Proposed change to mvp-scope" in out and "added" in out and "SCOPE-99" in out
    assert "Nothing applied: rerun with --yes" in out  # no terminal to ask on
    assert main(["revise", sid, "mvp-scope", REQUEST, "--yes", "--quiet", *opts]) == 0
    assert "Gate 2" in capsys.readouterr().out
    with make_service(replay_settings(tmp_path, cassette=cassette)) as again:
        assert len(again.load_state(sid).revisions) == 1
