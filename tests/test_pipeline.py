"""The spine, as a user drives it through the CLI with the replay provider (issue 3)."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import (
    POWER8,
    POWER8_IDEA,
    POWER8_RUN,
    capture_prompts,
    cassette_with,
    replay_cli_args,
    replay_settings,
)

from haytham.app import make_service
from haytham.cli import main
from haytham.schemas.anchor import ConceptAnchor
from haytham.stages import STAGES
from haytham.stages.story_generation import APPETITE_BOUNDS


def cli(tmp_path, *args, cassette=POWER8_RUN):
    return main([*args, *replay_cli_args(tmp_path, cassette)])


@pytest.fixture
def idea_file(tmp_path):
    path = tmp_path / "idea.md"
    path.write_text(POWER8_IDEA, encoding="utf-8")
    return path


def test_run_stops_at_gate_1_and_clarification_opens_it(tmp_path, idea_file, capsys):
    assert cli(tmp_path, "run", "--idea-file", str(idea_file), "--session-id", "p8") == 0
    out = capsys.readouterr().out
    assert "waiting at Gate 1" in out
    root = tmp_path / "sessions" / "p8"
    anchor = ConceptAnchor.model_validate_json((root / "concept_anchor.json").read_text())
    ambiguous = anchor.open_ambiguities()
    assert ambiguous and all(i.confidence < 0.7 for i in ambiguous)
    assert not (root / "stages" / "05-mvp-scope").exists()

    assert cli(tmp_path, "approve", "p8", "--gate", "1") == 2
    assert "need clarification" in capsys.readouterr().err
    gates = json.loads((root / "gates.json").read_text())
    assert gates["1"]["status"] == "open"

    for inv in ambiguous:
        assert cli(tmp_path, "clarify", "p8", "--invariant", inv.property, "--choice", "1") == 0
    clarified = ConceptAnchor.model_validate_json((root / "concept_anchor.json").read_text())
    for inv in ambiguous:
        now = clarified.invariant(inv.property)
        assert (now.value, now.confidence, now.user_clarified) == (
            inv.clarification_options[0],
            1.0,
            True,
        )
        assert not now.clarification_options and now.ambiguity is None
    assert "[clarified by founder]" in clarified.render()

    assert cli(tmp_path, "approve", "p8", "--gate", "1") == 0
    assert "waiting at Gate 2" in capsys.readouterr().out
    assert (root / "stages" / "06-capability-model" / "output.json").exists()
    gates = json.loads((root / "gates.json").read_text())
    assert gates["1"]["status"] == "approved" and len(gates["1"]["clarifications"]) == 2


def test_auto_approve_writes_ten_valid_envelopes_and_counts_calls(tmp_path, idea_file, capsys):
    assert (
        cli(
            tmp_path, "run", "--idea-file", str(idea_file), "--session-id", "auto", "--auto-approve"
        )
        == 0
    )
    root = tmp_path / "sessions" / "auto"
    for spec in STAGES:
        data = json.loads((root / "stages" / spec.dir_name / "output.json").read_text())
        spec.output_model.model_validate(data)
        assert data["stage"] == spec.slug and data["schema_version"] == 1
        assert (root / "stages" / spec.dir_name / "output.md").read_text().startswith("# ")
    summary = json.loads((root / "summary.json").read_text())
    assert summary["status"] == "done"
    for slug in ["anchor-extraction", *(s.slug for s in STAGES)]:
        assert summary["stages"][slug]["model_calls"] == 1, slug
        assert summary["stages"][slug]["input_tokens"] > 0
    anchor = json.loads((root / "concept_anchor.json").read_text())
    auto = [i for i in anchor["invariants"] if i["auto_resolved"]]
    assert auto and not any(i["user_clarified"] for i in anchor["invariants"])
    gates = json.loads((root / "gates.json").read_text())
    assert all(gates[str(n)]["status"] == "approved" for n in range(1, 5))
    assert all(c["auto"] for c in gates["1"]["clarifications"])


def test_the_anchor_is_extracted_from_the_idea_and_stage_1s_whole_output(tmp_path, monkeypatch):
    prompts = capture_prompts(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, until=1)
        analysis = svc.load_state(sid).outputs["idea-analysis"]
    (call,) = [p for p in prompts if p["agent"] == "anchor-extraction"]
    assert "<<<IDEA" in call["text"] and analysis.tldr in call["text"]
    assert analysis.content.strip() in call["text"]  # the prose, not only the TL;DR
    concept = analysis.model_dump(mode="json")["payload"]["solution_concept"]
    assert json.dumps(concept, ensure_ascii=False) in call["text"]


def test_every_stage_prompt_carries_the_full_anchor(tmp_path, monkeypatch):
    prompts = capture_prompts(monkeypatch)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True)
        anchor_texts = set()
        state = svc.load_state(sid)
    stage_calls = [p for p in prompts if p["agent"] in {s.slug for s in STAGES[1:]}]
    assert {p["agent"] for p in stage_calls} == {s.slug for s in STAGES[1:]}
    final_anchor = state.anchor_text
    for call in stage_calls:
        assert "CONCEPT ANCHOR" in call["text"]
        start = call["text"].index("CONCEPT ANCHOR")
        anchor_texts.add(call["text"][start : start + len(final_anchor)])
        assert "<<<IDEA" in call["text"] and "IDEA>>>" in call["text"]
    # stages after Gate 1 see the anchor exactly as it is in the session, verbatim
    late = [
        c
        for c in stage_calls
        if c["agent"] not in {"market-context", "risk-assessment", "validation-summary"}
    ]
    assert late and all(final_anchor in c["text"] for c in late)


def _story_session(tmp_path, replacement):
    cassette = cassette_with(
        tmp_path, POWER8 / replacement, drop_agents={"story-generation"}, passing_verifiers=True
    )
    svc = make_service(replay_settings(tmp_path, cassette=cassette))
    sid = svc.create_session(POWER8_IDEA, appetite="small")
    return svc, sid


def test_stories_over_appetite_are_reasked_once_with_the_bound(tmp_path, monkeypatch):
    prompts = capture_prompts(monkeypatch)
    svc, sid = _story_session(tmp_path, "stories_over_appetite.jsonl")
    with svc:
        svc.run(sid, auto_approve=True)
        state = svc.load_state(sid)
    stories = state.outputs["story-generation"].payload.stories
    assert len(stories) == 8 and state.status == "done"
    calls = [p for p in prompts if p["agent"] == "story-generation"]
    assert len(calls) == 2
    bound = APPETITE_BOUNDS["small"]
    assert f"at most {bound} stories" in calls[0]["text"]
    assert f"12 stories exceed the appetite bound of {bound}" in calls[1]["text"]
    events = (tmp_path / "sessions" / sid / "events.jsonl").read_text()
    assert '"type":"stage_reask","stage":"story-generation"' in events


def test_stories_still_over_fail_validation_and_block_gate_4(tmp_path, capsys):
    svc, sid = _story_session(tmp_path, "stories_still_over.jsonl")
    with svc:
        outcome = svc.run(sid, auto_approve=True, until=4)
        assert outcome.gate == 4
        status = svc.status(sid)
    assert any(
        b["id"].startswith("check:story-generation") and "11 stories" in b["message"]
        for b in status["blocking"]
    )
    record = json.loads(
        (tmp_path / "sessions" / sid / "stages" / "10-story-generation" / "output.json").read_text()
    )
    assert record["status"] == "needs_attention" and len(record["payload"]["stories"]) == 11
    settings_args = [
        "--provider",
        "replay",
        "--cassette",
        str(svc.settings.cassette),
        "--sessions-dir",
        str(tmp_path / "sessions"),
    ]
    assert main(["approve", sid, "--gate", "4", *settings_args]) == 2
    assert "blocking" in capsys.readouterr().err
    events = (tmp_path / "sessions" / sid / "events.jsonl").read_text().splitlines()
    failed = [json.loads(e) for e in events if '"stage_check_failed"' in e]
    assert [f["data"]["attempt"] for f in failed] == [1, 2]


def test_post_validators_record_findings_and_the_divergence_curve(tmp_path):
    with make_service(replay_settings(tmp_path, env={"HAYTHAM_EMBEDDINGS": "on"})) as svc:
        sid = svc.create_session(POWER8_IDEA)
        assert svc.run(sid, auto_approve=True).status == "done"
    root = tmp_path / "sessions" / sid
    summary = json.loads((root / "summary.json").read_text())
    curve = summary["divergence"]
    assert set(curve) >= {s.slug for s in STAGES[4:]}
    assert curve["story-generation"]["anchor"] >= 0.6  # ADR-022 7e target, faithful run
    for spec in STAGES:
        record = json.loads((root / "stages" / spec.dir_name / "output.json").read_text())
        assert isinstance(record["validations"], list)
