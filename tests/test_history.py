"""A gate's history from the persisted steps: rounds, reworks (the reviewer's and the verifier's,
with their feedback or review), overrides, clarifications, anchor edits, decisions, re-runs, and
each rework's before/after diff of the key items."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import POWER8, POWER8_IDEA, POWER8_RUN, replay_settings
from verify_helpers import CLEAN, DRIFT, DRIFTED_STAGES, service

from haytham.agents.context import FEEDBACK_HEADING
from haytham.app import make_service
from haytham.reports.history import Step, diff_outputs, gate_history
from haytham.stages import BY_SLUG
from haytham.state import SessionState

FEEDBACK = "Host controls must say the psychologist runs every circle; drop session recording."


def rework_cassette(tmp_path: Path) -> Path:
    """The full Power of 8 cassette plus an MVP scope turn that answers rework feedback: SCOPE-6
    retitled, SCOPE-11 (out of scope) dropped, SCOPE-13 (out of scope) added."""
    folder = tmp_path / "cassette"
    shutil.copytree(POWER8_RUN, folder)
    for line in (POWER8_RUN / "pipeline.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["agent"] != "mvp-scope":
            continue
        tool = next(i for i in entry["response"] if "tool" in i)
        payload = tool["input"]["payload"]
        host = next(i for i in payload["in_scope"] if i["id"] == "SCOPE-6")
        host["title"] = "Psychologist runs every circle"
        out = [i for i in payload["out_of_scope"] if i["id"] != "SCOPE-11"]
        out.append({**out[-1], "id": "SCOPE-13", "title": "Chat between sessions"})
        payload["out_of_scope"] = out
        entry["when"] = [FEEDBACK_HEADING]
        entry["note"] = "the MVP scope after the reviewer's rework"
        (folder / "rework.jsonl").write_text(json.dumps(entry) + "\n")
        return folder
    raise AssertionError("no mvp-scope turn in the cassette")


@pytest.fixture
def reworked(tmp_path):
    """A session at Gate 2, sent back once by the reviewer (MVP scope) and open again."""
    svc = make_service(replay_settings(tmp_path, cassette=rework_cassette(tmp_path)))
    sid = svc.create_session(POWER8_IDEA)
    svc.run(sid, auto_approve=True, until=2)
    svc.rework(sid, "mvp-scope", FEEDBACK)
    yield svc, sid
    svc.close()


def test_reviewer_rework_is_a_new_round_with_its_feedback_and_diff(reworked):
    svc, sid = reworked
    history = svc.gate_history(sid, 2)
    assert [(e.kind, e.round) for e in history.entries] == [
        ("opened", 1),
        ("rework", 1),
        ("opened", 2),
    ]
    assert history.rounds == 2 and len(history.reworks) == 1
    first, rework, second = history.entries
    assert rework.stage == "mvp-scope" and rework.feedback == FEEDBACK
    assert rework.summary == "You sent MVP scope back for rework"
    assert "After your rework of MVP scope" in second.details
    assert first.at < rework.at < second.at  # ISO 8601 UTC, in order

    scope, caps = rework.diffs  # the reworked stage and the later stage of the phase re-ran
    assert (scope.stage, caps.stage) == ("mvp-scope", "capability-model")
    fields = {f.field: f for f in scope.fields}
    (changed,) = fields["in_scope"].changed
    assert changed.id == "SCOPE-6" and changed.fields == ("title",)
    assert (changed.before_title, changed.title) == (
        "Psychologist host controls",
        "Psychologist runs every circle",
    )
    assert fields["in_scope"].unchanged == 5
    assert [(i.id, i.title) for i in fields["out_of_scope"].added] == [
        ("SCOPE-13", "Chat between sessions")
    ]
    assert [(i.id, i.title) for i in fields["out_of_scope"].removed] == [
        ("SCOPE-11", "Session recording")
    ]
    assert scope.changes == 3 and caps.changes == 0  # the replayed capabilities are the same

    as_json = json.loads(json.dumps(history.to_dict()))
    assert as_json["rounds"] == 2 and as_json["entries"][1]["feedback"] == FEEDBACK
    # Gate 1 keeps its own history; Gates 3 and 4 have none yet
    assert [e.kind for e in svc.gate_history(sid, 1).entries] == [
        "opened",
        "clarification",
        "recheck",  # the clarified anchor is re-checked before the approval
        "approved",
    ]
    assert svc.gate_history(sid, 3).entries == ()


def test_a_rework_records_what_it_did_to_the_invariants(reworked):
    """The reworked scope adds SCOPE-13, an exclusion honouring INV-4 (the live gathering):
    code computes that, for the history and the session's event log."""
    svc, sid = reworked
    rework = next(e for e in svc.gate_history(sid, 2).entries if e.kind == "rework")
    scope = rework.diffs[0]
    assert scope.broken == ()
    assert any("Now honoured by the exclusion SCOPE-13" in line for line in scope.invariants)
    events = [
        json.loads(x)
        for x in (svc.settings.sessions_dir / sid / "events.jsonl").read_text().splitlines()
    ]
    (impact,) = [e for e in events if e["type"] == "invariant_impact"]
    assert impact["stage"] == "mvp-scope" and impact["data"]["touched"] == ["INV-4"]
    assert impact["data"]["broken"] == []


def test_automatic_rework_shows_the_verifiers_review_and_what_changed(tmp_path):
    svc = service(tmp_path, CLEAN, DRIFT, drop=DRIFTED_STAGES)
    sid = svc.create_session(POWER8_IDEA, session_id="drift")
    try:
        svc.run(sid, auto_approve=True, until=2)
        history = svc.gate_history(sid, 2)
    finally:
        svc.close()
    auto, opened = history.entries
    assert (auto.kind, auto.round, auto.stage) == ("auto_rework", 1, "mvp-scope")
    assert auto.summary == "Automatic rework 1: the verifier sent MVP scope back"
    issues = [d for d in auto.details if d.startswith("blocking: MVP scope: ")]
    assert {d.split(": ")[2] for d in issues} == {
        "group_structure",
        "orchestrator_role",
        "access_model",
        "interaction_model",
    }
    assert any(d.startswith("Suggestion: Honour group_structure") for d in auto.details)
    scope = next(d for d in auto.diffs if d.stage == "mvp-scope")
    fields = {f.field: f for f in scope.fields}
    assert "SCOPE-5" in [i.id for i in fields["in_scope"].added]
    assert ("SCOPE-1", "Sign-up and login", "Invite-only patient access") in [
        (c.id, c.before_title, c.title) for c in fields["in_scope"].changed
    ]
    assert (opened.kind, opened.round) == ("opened", 1)
    assert "Automatic rework: cleared after 1 automatic rework round(s)" in opened.details


def test_gate_1_clarifications_edits_overrides_and_approval(tmp_path):
    # the stages' turns alone: the phase verifier is inconclusive, a blocking item to override
    svc = make_service(replay_settings(tmp_path, cassette=POWER8 / "pipeline.jsonl"))
    sid = svc.create_session(POWER8_IDEA)
    try:
        svc.run(sid, until=1)
        pending = [i.property for i in svc.load_state(sid).anchor.open_ambiguities()]
        choices = {p: "1" for p in pending}
        svc.decide(sid, 1, {"kind": "clarify_all", "choices": choices}, continue_run=False)
        anchor = svc.load_state(sid).anchor
        target = anchor.invariants[0]
        svc.decide(
            sid,
            1,
            {"kind": "edit", "invariant": target.property, "value": "only invited patients"},
            continue_run=False,
        )
        goal = anchor.intent.non_goals[0]
        svc.decide(sid, 1, {"kind": "remove_non_goal", "text": goal}, continue_run=False)
        svc.recheck(sid, 1)  # the edit left the phase's checks stale
        svc.override(sid, 1, "checked by hand")
        svc.approve(sid, 1, "looks right", continue_run=False)
        history = svc.gate_history(sid, 1)
    finally:
        svc.close()
    kinds = [e.kind for e in history.entries]
    assert kinds == [
        "opened",
        "clarification",
        "recheck",  # a clarification re-checks the phase against the clarified anchor
        "edit",
        "edit",
        "recheck",
        "override",
        "approved",
    ]
    assert all(e.round == 1 for e in history.entries)
    opened, clarified, auto_check, edited, removed, recheck, override, approved = history.entries
    assert "after the clarification" in " ".join(auto_check.details)
    assert "the concept anchor changed" in " ".join(recheck.details)
    assert any(d.startswith("Verification inconclusive") for d in opened.details)
    assert clarified.summary == f"Clarified {len(pending)} invariant(s)"
    assert edited.summary == f"Edited the anchor: {target.property}"
    assert edited.details == (f"Before: {target.value}", "After: only invited patients")
    assert removed.details == (f"Removed: {goal}",)
    assert override.feedback == "checked by hand"
    assert "verification:inconclusive" in override.details
    assert (approved.summary, approved.feedback) == ("Approved Gate 1", "looks right")


def test_a_re_run_clears_the_gate_and_a_new_round_1_opens(reworked):
    svc, sid = reworked
    svc.clear_from(sid, "capability-model")
    svc.run(sid)
    entries = svc.gate_history(sid, 2).entries
    assert [(e.kind, e.round) for e in entries] == [
        ("opened", 1),
        ("rework", 1),
        ("opened", 2),
        ("cleared", 2),
        ("opened", 1),
    ]
    assert entries[3].stage == "capability-model"
    assert entries[3].summary.startswith("Re-run from Capability model")


def test_a_rework_still_running_shows_what_changed_so_far(reworked):
    svc, sid = reworked
    svc.rework(sid, "mvp-scope", FEEDBACK + " Again.", continue_run=False)
    rework = svc.gate_history(sid, 2).entries[-1]
    assert (rework.kind, rework.round, rework.diffs) == ("rework", 2, ())


def test_a_change_request_is_a_revision_with_its_diff_then_a_re_run(tmp_path):
    folder = rework_cassette(tmp_path)
    line = json.loads((folder / "rework.jsonl").read_text())
    revised = next(i for i in line["response"] if "tool" in i)["input"]
    answer = {"revised": revised, "why": "Hosting is his job.", "invariants_touched": ["INV-3"]}
    turn = {
        "agent": "change-request",
        "turn": 1,
        "response": [{"tool": "MvpScopeOutputChange", "input": answer}],
    }
    (folder / "rework.jsonl").write_text(json.dumps(turn) + "\n")  # no rework turn this time
    svc = make_service(replay_settings(tmp_path, cassette=folder))
    sid = svc.create_session(POWER8_IDEA)
    try:
        svc.run(sid, auto_approve=True, until=2)
        svc.apply_change(sid, svc.propose_change(sid, "mvp-scope", "Say who hosts."))
        entries = svc.gate_history(sid, 2).entries
    finally:
        svc.close()
    assert [(e.kind, e.round) for e in entries] == [
        ("opened", 1),
        ("revised", 1),
        ("cleared", 1),
        ("opened", 1),
    ]
    revision, cleared = entries[1], entries[2]
    assert revision.summary == "Change request applied to MVP scope"
    assert revision.feedback == "Say who hosts."
    assert "Why: Hosting is his job." in revision.details
    (diff,) = revision.diffs
    assert diff.changes == 3 and [c.id for c in diff.fields[0].changed] == ["SCOPE-6"]
    assert cleared.summary.startswith("Re-run after the change request to MVP scope")


def test_diff_of_a_stage_that_did_not_exist_before_lists_every_item_as_added():
    spec = BY_SLUG["mvp-scope"]
    line = next(
        json.loads(x)
        for x in (POWER8_RUN / "pipeline.jsonl").read_text().splitlines()
        if json.loads(x)["agent"] == "mvp-scope"
    )
    tool = next(i for i in line["response"] if "tool" in i)
    output = spec.output_model.model_validate(tool["input"])
    diff = diff_outputs("mvp-scope", None, output)
    assert [len(f.added) for f in diff.fields] == [6, 6] and diff.summary_changed
    assert diff_outputs("mvp-scope", output, output).changes == 0


def test_no_steps_no_history():
    assert gate_history([], 2).entries == ()
    blank = Step(0, "start", SessionState())
    assert gate_history([blank, blank], 4).rounds == 0


# -- on the pages (AppTest) ---------------------------------------------------------------------
def test_gate_page_shows_the_new_round_its_feedback_and_the_diff(tmp_path, monkeypatch):
    from test_ui_support import app, service, session_at, shows, use_replay

    use_replay(tmp_path, monkeypatch, cassette=rework_cassette(tmp_path))
    sid = session_at(2)
    with service() as svc:
        svc.rework(sid, "mvp-scope", FEEDBACK)
    at = app(sid, "views/gate_2.py")
    assert not at.exception
    assert shows(at, "Gate 2: 2 round(s), 1 rework(s).")
    timeline = next(m.value for m in at.markdown if "Round 2" in m.value)
    assert "You sent MVP scope back for rework" in timeline
    assert "Psychologist runs every circle" not in timeline  # the diff is in the expander
    changed = "MVP scope: 1 added, 1 removed, 1 changed; Capability model: no change in its items"
    assert changed in timeline
    (box,) = [e for e in at.expander if "what changed" in e.label]
    inside = " ".join(m.value for m in box.markdown)
    assert "Psychologist host controls → Psychologist runs every circle" in inside
    assert "`SCOPE-13` Chat between sessions" in inside and "`SCOPE-11`" in inside


def test_an_anchor_edit_is_stale_on_every_page_until_the_re_run(tmp_path, monkeypatch):
    from test_ui_support import app, poll, service, session_at, shows, use_replay

    use_replay(tmp_path, monkeypatch)
    sid = session_at(1)
    with service() as svc:
        state = svc.load_state(sid)
        choices = {i.property: "1" for i in state.anchor.open_ambiguities()}
        svc.decide(sid, 1, {"kind": "clarify_all", "choices": choices}, continue_run=False)
        svc.decide(
            sid,
            1,
            {"kind": "edit", "invariant": "orchestrator_role", "value": "a co-host runs them"},
            continue_run=False,
        )
        assert svc.status(sid)["stale"] == [
            "market-context",
            "risk-assessment",
            "validation-summary",
        ]
    banner = "Stale checks: the concept anchor changed after the checks of Market context"
    for page in ("run", "verdict", "fidelity", "stories"):
        at = app(sid, f"views/{page}.py")
        assert not at.exception, page
        assert shows(at, banner), page
        assert shows(at, "Edited orchestrator\\_role"), page
    at = app(sid, "views/gate_1.py")
    assert shows(at, "This gate's checks are stale")  # the gate page's own warning
    at = app(sid, "views/verdict.py")
    at.button(key="rerun_stale_banner").click().run()
    assert not at.exception and at.title[0].value == "Run"
    at.switch_page("views/run.py")
    poll(at, lambda a: shows(a, "Waiting at **Gate 1**"))
    assert not shows(at, banner)
    with service() as svc:
        assert svc.status(sid)["stale"] == []


def test_a_fork_starts_with_what_it_inherited(reworked):
    svc, sid = reworked
    fork = svc.fork(sid, "capability-model")
    gate_1 = svc.gate_history(fork, 1).entries
    assert [e.kind for e in gate_1] == ["inherited", "clarification", "recheck", "approved"]
    assert gate_1[0].summary.startswith("Carried over from before this session's first step")
    assert svc.gate_history(fork, 2).entries == ()  # cleared by the fork: it runs again
    svc.run(fork)
    assert [e.kind for e in svc.gate_history(fork, 2).entries] == ["opened"]
