"""Claim consistency: quantities agree across stages, web_search claims have a tool call,
founder claims come from the idea."""

from __future__ import annotations

from pathlib import Path

from haytham.schemas.envelope import Claim
from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case
from haytham.validate.claims import founder_support

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
