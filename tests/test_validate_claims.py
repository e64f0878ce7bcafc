"""Claim consistency: quantities agree across stages, web_search claims have a tool call,
founder claims come from the idea."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

from pipeline_helpers import POWER8, POWER8_IDEA, cassette_with, replay_settings

from haytham.app import make_service
from haytham.changes.request import proposal_model, propose
from haytham.reports.export import export
from haytham.schemas.envelope import Claim
from haytham.stages import BY_SLUG
from haytham.state import SessionState
from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case
from haytham.validate.claims import downgrade_unsourced, founder_support

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def found(s: Snapshot) -> list:
    return run_validators(s, settings=LEX).by_validator("claim_consistency")


def with_claims(s: Snapshot, slug: str, claims: list[Claim]) -> Snapshot:
    out = s.outputs[slug].model_copy(update={"claims": claims})
    return Snapshot(s.idea, s.anchor, {**s.outputs, slug: out}, s.tool_calls)


def test_power_of_8_market_size_changes(tmp_path: Path) -> None:
    (f,) = found(snap("power_of_8__market_size_changes", tmp_path))
    assert f.stage == "validation-summary" and "$4.3 billion" in f.message
    assert "$23.6 billion" in f.message


def test_tam_and_sam_are_different_quantities(tmp_path: Path) -> None:
    assert found(snap("market_homecooks__tam_and_sam", tmp_path)) == []


def test_unsourced_web_search_claim(tmp_path: Path) -> None:
    """ADR-022 S2: '68% of therapists report insufficient tools' with no search behind it."""
    (f,) = found(snap("power_of_8__unsourced_statistic", tmp_path))
    assert f.stage == "market-context" and "unsourced" in f.message and "68%" in f.evidence


def test_web_search_claim_matched_by_tool_result(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    assert found(s) == []  # $23.6 billion and $13.33 appear in logged search results
    no_calls = Snapshot(s.idea, s.anchor, s.outputs, ())
    assert len(found(no_calls)) == 2
    # the whole event shape is accepted too
    events = tuple(
        {"ts": "t", "type": "tool_call", "stage": c["stage"], "data": dict(c)} for c in s.tool_calls
    )
    assert found(Snapshot(s.idea, s.anchor, s.outputs, events)) == []


def test_number_must_match_even_with_a_real_url(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    claims = [
        Claim(
            statement="The global digital mental health market was $31 billion in 2023.",
            source="web_search",
            evidence="https://www.grandviewresearch.com/industry-analysis/"
            "digital-mental-health-market",
        )
    ]
    (f,) = found(with_claims(s, "market-context", claims))
    assert "no logged search result supports" in f.message


def test_unsourced_statistic_marked_unsourced(tmp_path: Path) -> None:
    (f,) = found(snap("mobile_birdcount__unsourced_smartphone_stat", tmp_path))
    assert f.stage == "risk-assessment" and "unsourced statistic" in f.message


def test_phantom_founder_claims(tmp_path: Path) -> None:
    """ADR-022 S2: 'minimal technical complexity', 'subscription revenue', 'scale beyond'."""
    fs = found(snap("power_of_8__phantom_founder_claims", tmp_path))
    assert len(fs) == 3 and {f.stage for f in fs} == {"risk-assessment"}
    assert any("subscription" in f.evidence for f in fs)


def test_founder_claims_supported_by_the_idea() -> None:
    idea = "I want an app for my existing patients where eight people gather in online sessions."
    share, _, unknown = founder_support(
        "Existing patients gather in online sessions of eight", idea
    )
    assert share >= 0.8 and unknown == []
    share, missing, _ = founder_support("The app involves minimal technical complexity", idea)
    assert share < 0.45 and "minimal" in missing
    _, _, unknown = founder_support("Existing patients: 5,000 will join", idea)
    assert unknown == [5000.0]


def test_a_one_letter_scale_that_can_be_a_unit_reads_as_written_too() -> None:
    """ "under-10m boats" restates "under-10 metre boats": ten metres, not ten million boats;
    a scale with a currency ("£10m") or one the idea never states is still a number it adds."""
    idea = "A swap ledger for the co-op's under-10 metre boats, twelve skippers in all."
    assert founder_support("Skippers of under-10m boats swap kilos", idea)[2] == []
    assert founder_support("The co-op's 40m boats swap kilos", idea)[2] == [40e6]
    assert founder_support("Skippers would pay £10m a year", idea)[2] == [10e6]


def test_numbers_the_idea_writes_as_words_support_a_claim_in_digits() -> None:
    idea = "Weddings come roughly one a fortnight, and twelve ringers share them."
    assert founder_support("~1 wedding/fortnight; 12 ringers", idea)[2] == []
    assert founder_support("~3 weddings a fortnight", idea)[2] == [3.0]


# -- code rewrites what it checked (issue 25, point 5) -------------------------------------------
def _market_answer() -> dict:
    for line in (POWER8 / "pipeline.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["agent"] == "market-context":
            return entry
    raise AssertionError("no market-context turn")


def _claims_web_search_cassette(tmp_path: Path) -> Path:
    """The recorded market answer, edited (a fixture): the Zoom price claim and the first
    competitor's pricing say web_search, and no search tool ran."""
    entry = copy.deepcopy(_market_answer())
    answer = entry["response"][-1]["input"]
    zoom = next(c for c in answer["claims"] if "Zoom" in c["statement"])
    zoom["source"] = "web_search"
    answer["payload"]["competitors"][0]["pricing_source"] = "web_search"
    extra = tmp_path / "market.jsonl"
    extra.write_text(json.dumps(entry) + "\n")
    return cassette_with(tmp_path, extra, drop_agents={"market-context"}, passing_verifiers=True)


def test_a_web_search_claim_no_search_backs_is_stored_as_unsourced(tmp_path: Path) -> None:
    cassette = _claims_web_search_cassette(tmp_path)
    with make_service(replay_settings(tmp_path, cassette=cassette)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)  # to Gate 1
        state = svc.load_state(sid)
    market = state.outputs["market-context"]
    zoom = next(c for c in market.claims if "Zoom" in c.statement)
    assert (zoom.source, zoom.claimed_source) == ("unsourced", "web_search")
    assert zoom.shown_source == "unsourced (said web search; no logged search supports it)"
    first = market.payload.competitors[0]
    assert (first.pricing_source, first.claimed_pricing_source) == ("unsourced", "web_search")
    others = [c for c in market.claims if "Zoom" not in c.statement]
    assert all(c.claimed_source is None for c in others)  # labels a search was not needed for
    messages = [f.message for f in state.validations["market-context"]]
    assert any("code stored it as unsourced" in m and "claim" in m for m in messages), messages
    assert any(f"{first.id}" in m and "pricing" in m for m in messages), messages
    saved = json.loads(export(state, "json"))["outputs"]["market-context"]
    assert any(c.get("claimed_source") == "web_search" for c in saved["claims"])
    assert "web_search" not in {c["source"] for c in saved["claims"]}
    assert saved["payload"]["competitors"][0]["pricing_source"] == "unsourced"
    pdf = tmp_path / "validation.pdf"
    pdf.write_bytes(export(state, "validation-pdf"))
    text = " ".join(
        subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout.split()
    )
    assert "said web search; no logged search supports it" in text


def test_a_claim_a_logged_search_backs_keeps_web_search(tmp_path: Path) -> None:
    spec = BY_SLUG["market-context"]
    answer = copy.deepcopy(_market_answer()["response"][-1]["input"])
    zoom = next(c for c in answer["claims"] if "Zoom" in c["statement"])
    zoom["source"] = "web_search"
    answer["payload"]["competitors"][0]["pricing_source"] = "web_search"
    answer["payload"]["competitors"][0]["pricing_evidence"] = "Zoom Pro $13.33 per month"
    output = spec.output_model.model_validate(answer)
    search = {
        "type": "tool_call",
        "stage": "market-context",
        "data": {
            "tool": "web_search",
            "input": {"query": "zoom pricing"},
            "result": "Zoom Pro costs $13.33 per month; the plans run $13 to $16 per host.",
        },
    }
    kept, notes = downgrade_unsourced(output, "market-context", [search])
    assert notes == [] and kept.claims == output.claims
    assert kept.payload.competitors[0].pricing_source == "web_search"
    later = {**search, "stage": "story-generation"}  # a later stage's search backs nothing here
    gone, notes = downgrade_unsourced(output, "market-context", [later])
    assert len(notes) == 2 and gone.payload.competitors[0].pricing_source == "unsourced"


def test_a_change_request_cannot_bring_an_unbacked_web_search_label_back() -> None:
    spec = BY_SLUG["market-context"]
    recorded = copy.deepcopy(_market_answer()["response"][-1]["input"])
    state = SessionState(outputs={spec.slug: spec.output_model.model_validate(recorded)})
    revised = copy.deepcopy(recorded)
    revised["claims"][0]["source"] = "web_search"
    answer = proposal_model(spec).model_validate({"revised": revised, "why": "w"})
    proposal = propose(spec, state, "Say where the market size comes from.", answer)
    claim = proposal.revised["claims"][0]
    assert (claim["source"], claim["claimed_source"]) == ("unsourced", "web_search")
