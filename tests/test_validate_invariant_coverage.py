"""Invariant coverage: honoured, evidenced, not scoped out — or overridden with a reason."""

from __future__ import annotations

from pathlib import Path

from haytham.schemas.envelope import InvariantOverride
from haytham.validate import Snapshot, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import load_case

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def found(s: Snapshot) -> list:
    return run_validators(s, settings=LEX).by_validator("invariant_coverage")


def replace_output(s: Snapshot, slug: str, **update: object) -> Snapshot:
    out = s.outputs[slug].model_copy(update=update)
    return Snapshot(s.idea, s.anchor, {**s.outputs, slug: out}, s.tool_calls)


def test_power_of_8_group_structure_scoped_out(tmp_path: Path) -> None:
    """ADR-022: 'Organizing users into groups' OUT of scope while compliance claims it preserved."""
    s = snap("power_of_8__group_structure_out", tmp_path)
    assert "group_structure" in s.outputs["mvp-scope"].anchor_compliance.invariants_preserved
    fs = [f for f in found(s) if f.invariant == "group_structure"]
    assert fs and fs[0].stage == "mvp-scope"
    assert "out of scope while claiming to preserve it" in fs[0].message
    assert "Organizing users into groups" in fs[0].evidence


def test_faithful_sessions_are_clean(tmp_path: Path) -> None:
    for name in (
        "power_of_8",
        "cli_planlint",
        "api_redact",
        "market_homecooks",
        "web_quiz",
        "mobile_birdcount",
        "power_of_8__partial_stage6",
    ):
        assert found(snap(name, tmp_path)) == [], name


def test_dropped_invariants_are_found(tmp_path: Path) -> None:
    cases = {
        "power_of_8__timing_dropped": "timing_constraint",
        "api_redact__audit_dropped": "audit_trail",
        "market_homecooks__radius_dropped": "service_radius",
        "web_quiz__no_text_format": "question_format",
        "cli_planlint__pricing_api_online": "data_locality",
    }
    for name, prop in cases.items():
        fs = found(snap(name, tmp_path))
        assert any(f.invariant == prop and f.stage == "mvp-scope" for f in fs), name


def test_silently_unaccounted_invariant(tmp_path: Path) -> None:
    s = snap("power_of_8__no_orchestrator", tmp_path)
    fs = [f for f in found(s) if f.invariant == "orchestrator_role"]
    assert fs and fs[0].stage == "mvp-scope"
    assert "neither preserves nor overrides" in fs[0].message or "silently drops" in fs[0].message


def test_override_with_reason_is_honoured(tmp_path: Path) -> None:
    assert found(snap("web_quiz__override_question_format", tmp_path)) == []


def test_override_without_reason_is_reported(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["system-traits"].anchor_compliance
    comp = comp.model_copy(
        update={
            "invariants_preserved": [p for p in comp.invariants_preserved if p != "session_medium"],
            "invariants_overridden": [InvariantOverride(invariant="session_medium", reason="n/a")],
        }
    )
    (f,) = found(replace_output(s, "system-traits", anchor_compliance=comp))
    assert f.invariant == "session_medium" and "without a real reason" in f.message


def test_unlisted_invariant_in_a_how_stage(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["build-buy-analysis"].anchor_compliance
    comp = comp.model_copy(update={"invariants_preserved": ["access_model"]})
    fs = found(replace_output(s, "build-buy-analysis", anchor_compliance=comp))
    assert len(fs) == 5 and all("neither preserves nor overrides" in f.message for f in fs)


def test_genericized_identity(tmp_path: Path) -> None:
    fs = found(snap("power_of_8__async_wish_board", tmp_path))
    assert any(
        f.invariant is None
        and "genericizes identity feature" in f.message
        and "Synchronous group gathering" in f.message
        for f in fs
    )


def test_self_reported_genericization(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    comp = s.outputs["mvp-scope"].anchor_compliance.model_copy(
        update={"identity_features_genericized": ["Synchronous group gathering"]}
    )
    (f,) = found(replace_output(s, "mvp-scope", anchor_compliance=comp))
    assert "reports genericizing" in f.message


def test_no_anchor_no_findings(tmp_path: Path) -> None:
    s = snap("power_of_8__group_structure_out", tmp_path)
    assert found(Snapshot(s.idea, None, s.outputs, s.tool_calls)) == []
