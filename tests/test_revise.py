"""Change requests after Gate 1: proposed as a diff, applied as a revision on the record, and
the later stages re-run and re-verified through the normal pipeline."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import GateError, InputError
from haytham.pipeline.staleness import stale_checks
from haytham.reports.export import export
from haytham.reports.pdf import report

REQUEST = "Send reminders by SMS instead of email."


def _scope_answer() -> dict:
    line = next(
        json.loads(x)
        for x in (POWER8 / "pipeline.jsonl").read_text().splitlines()
        if x.strip() and json.loads(x)["agent"] == "mvp-scope"
    )
    return line["response"][-1]["input"]


def _change_cassette(
    tmp_path: Path,
    breaks: list[str] | None = None,
    *,
    edit: Callable[[dict], None] | None = None,
    touched: list[str] | None = None,
) -> Path:
    """The scripted change agent: SCOPE-1 retitled, one item added (a test fixture); or, with
    ``edit``, whatever ``edit`` does to the recorded scope payload."""
    revised = copy.deepcopy(_scope_answer())
    items = revised["payload"]["in_scope"]
    if edit is None:
        items[0]["title"] = items[0]["title"] + " (SMS reminders)"
        items.append({"id": "SCOPE-99", "title": "SMS reminder before each circle", "carries": []})
    else:
        edit(revised["payload"])
    answer = {
        "revised": revised,
        "why": "Reminders go out by SMS, which patients read.",
        "invariants_touched": ["INV-1"] if touched is None else touched,
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


def _drop_invite_only(payload: dict) -> None:
    """SCOPE-1 (invite-only access), the only IN item that carries INV-1, removed."""
    payload["in_scope"] = [i for i in payload["in_scope"] if i["id"] != "SCOPE-1"]


def _drop_scheduling(payload: dict) -> None:
    """SCOPE-3 removed: INV-3 is still carried by SCOPE-2 and SCOPE-6."""
    payload["in_scope"] = [i for i in payload["in_scope"] if i["id"] != "SCOPE-3"]


def test_a_change_that_removes_an_invariants_last_carrier_is_refused_whatever_the_agent_says(
    tmp_path,
) -> None:
    cassette = _change_cassette(tmp_path, edit=_drop_invite_only, touched=[])  # breaks: []
    svc, sid = _at_gate_2(tmp_path, cassette)
    with svc:
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        assert proposal.breaks == [] and proposal.invariants_touched == []  # the agent's word
        assert proposal.impact.broken == ["INV-1"]  # code's check
        (inv_1,) = proposal.impact.invariants
        assert inv_1.carriers_removed == ["SCOPE-1"] and inv_1.broken
        assert any("INV-1 is broken" in d for d in proposal.impact.disagreements())
        before = svc.load_state(sid)
        with pytest.raises(GateError, match="would break INV-1; nothing was applied"):
            svc.apply_change(sid, proposal)
        # a proposal edited to look harmless is checked again against the session
        harmless = proposal.model_copy(update={"impact": type(proposal.impact)()})
        with pytest.raises(GateError, match="would break INV-1"):
            svc.apply_change(sid, harmless)
        assert svc.load_state(sid) == before
        assert svc.load_state(sid).revisions == []


def test_the_cli_shows_codes_impact_and_the_disagreement_and_refuses(tmp_path, capsys) -> None:
    cassette = _change_cassette(tmp_path, edit=_drop_invite_only, touched=[])
    svc, sid = _at_gate_2(tmp_path, cassette)
    svc.close()
    capsys.readouterr()
    opts = replay_cli_args(tmp_path, cassette)
    assert main(["revise", sid, "mvp-scope", REQUEST, "--yes", "--quiet", *opts]) != 0
    out, err = capsys.readouterr()
    assert "Invariants it touches (code's check): INV-1" in out
    assert "BROKEN: INV-1 (access_model) loses its last item that delivers it" in out
    assert "The agent's answer: touches none; breaks none." in out
    assert "Disagreement: INV-1 is broken by this change" in out
    assert "would break INV-1; nothing was applied" in err
    with make_service(replay_settings(tmp_path, cassette=cassette)) as again:
        assert again.load_state(sid).revisions == []


def test_the_revision_on_record_holds_the_computed_impact(tmp_path) -> None:
    cassette = _change_cassette(tmp_path, edit=_drop_scheduling, touched=["INV-1"])
    svc, sid = _at_gate_2(tmp_path, cassette)
    root = tmp_path / "sessions" / sid
    with svc:
        proposal = svc.propose_change(sid, "mvp-scope", REQUEST)
        assert proposal.impact.broken == [] and proposal.impact.touched == ["INV-3"]
        svc.apply_change(sid, proposal)
        history = svc.gate_history(sid, 2)
        svc.run(sid, auto_approve=True)  # to the end, for the specification PDF
        state = svc.load_state(sid)
    (saved,) = json.loads((root / "revisions.json").read_text())
    assert saved["invariants_touched"] == ["INV-3"]
    (inv_3,) = saved["impact"]["invariants"]
    assert inv_3["invariant"] == "INV-3" and inv_3["carriers_removed"] == ["SCOPE-3"]
    assert inv_3["broken"] is False and saved["impact"]["agent_touched"] == ["INV-1"]
    assert json.loads(export(state, "json"))["revisions"][0]["impact"]["invariants"]
    markdown = export(state, "markdown")
    assert "No longer delivered by SCOPE-3" in markdown
    assert "Disagreement: The change touches INV-3" in markdown
    pdf = tmp_path / "spec.pdf"
    pdf.write_bytes(report(state, "specification"))
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "Change requests" in text and "No longer delivered by SCOPE-3" in " ".join(text.split())
    revised = next(e for e in history.entries if e.kind == "revised")
    assert "Invariants touched (code's check): INV-3" in revised.details
    assert any("SCOPE-3" in line for line in revised.diffs[0].invariants)
