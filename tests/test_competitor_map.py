"""The competitor map: typed competitors with ids that risk-assessment and validation-summary
cite; code numbers them and relinks the citations, and drops a citation that names nothing."""

from __future__ import annotations

import csv
import io

import pytest
from pipeline_helpers import POWER8_IDEA, replay_cli_args, replay_settings

from haytham.app import make_service
from haytham.cli import main
from haytham.errors import InputError
from haytham.reports.export import export
from haytham.stages import BY_SLUG, StageView
from haytham.stages.market_context import NOT_STATED, MarketContext
from haytham.state import SessionState
from haytham.validate import Snapshot, ValidatorSettings, run_validators

MARKET = {
    "jobs_to_be_done": ["When isolated, I want support, so I can feel less alone."],
    "market_size": "One practice's patients.",
    "competitors": [
        {"name": "Plain video call", "jtbd_match": "direct", "gap": "no Power of 8 structure"},
        {"id": "COMP-01", "name": "Support group app", "jtbd_match": "adjacent"},
        {"id": "comp 7", "name": "Phone circle", "jtbd_match": "direct"},
    ],
}


def _view(**outputs) -> StageView:
    return StageView(idea=POWER8_IDEA, outputs=outputs)


def _market_output():
    spec = BY_SLUG["market-context"]
    return spec.output_model(tldr="t", content="c", payload=MarketContext.model_validate(MARKET))


def test_competitors_get_unique_ids_and_their_fields_default_sensibly() -> None:
    market = MarketContext.model_validate(MARKET)
    assert [c.id for c in market.competitors] == ["COMP-08", "COMP-01", "COMP-07"]
    first = market.competitors[0]
    assert (first.pricing_source, first.switching_cost, first.gap) == (
        "unsourced",
        "medium",
        "no Power of 8 structure",
    )
    assert market.catalog() == {
        "COMP-08": "Plain video call",
        "COMP-01": "Support group app",
        "COMP-07": "Phone circle",
    }


def test_risks_and_scores_cite_competitors_by_id_name_or_spelling() -> None:
    view = _view(**{"market-context": _market_output()})
    risk_spec = BY_SLUG["risk-assessment"]
    risks = risk_spec.output_model.model_validate(
        {
            "tldr": "t",
            "content": "c",
            "payload": {
                "claims": [
                    {"statement": "s", "origin": "founder", "severity": "low", "support": "partial"}
                ],
                "risks": [{"risk": "r", "competitors": ["comp-1", "Phone circle"]}],
            },
        }
    )
    done, problems = risk_spec.complete(risks, view)
    assert done.payload.risks[0].competitors == ["COMP-01", "COMP-07"] and problems == []
    risks.payload.risks[0].competitors = ["Zoom Enterprise", "COMP-07"]
    done, problems = risk_spec.complete(risks, view)
    # a citation that names no competitor on the map is dropped, never a reason to re-ask
    assert done.payload.risks[0].competitors == ["COMP-07"] and problems == []


def test_a_run_keeps_the_map_and_the_exports_carry_it(tmp_path) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)
        state = svc.load_state(sid)
    market = state.outputs["market-context"].payload
    assert market.competitors and all(c.id.startswith("COMP-") for c in market.competitors)
    markdown = export(state, "markdown")
    assert all(c.id in markdown for c in market.competitors)
    assert f'"id": "{market.competitors[0].id}"' in export(state, "json")


# -- the map is used (issue 25, point 6) -----------------------------------------------------------
def test_names_in_a_risk_or_score_are_relinked_to_ids() -> None:
    view = _view(**{"market-context": _market_output()})
    risk_spec = BY_SLUG["risk-assessment"]
    risks = risk_spec.output_model.model_validate(
        {
            "tldr": "t",
            "content": "c",
            "payload": {
                "claims": [
                    {"statement": "s", "origin": "founder", "severity": "low", "support": "partial"}
                ],
                "risks": [
                    {"risk": "Members stay in their phone circle", "mitigation": "m"},
                    {"risk": "Nobody joins", "mitigation": "see comp-1"},
                    {"risk": "Circles phone in sick", "mitigation": "none"},
                ],
            },
        }
    )
    done, _ = risk_spec.complete(risks, view)
    assert [r.competitors for r in done.payload.risks] == [["COMP-07"], ["COMP-01"], []]


def _validated(outputs: dict) -> list:
    snap = Snapshot(POWER8_IDEA, None, outputs, ())
    return run_validators(snap, settings=ValidatorSettings(embeddings=False)).by_validator(
        "competitor_map"
    )


def test_uncited_competition_and_empty_rows_are_quality_flags_not_silence() -> None:
    market = _market_output()
    risk_spec = BY_SLUG["risk-assessment"]
    risks = risk_spec.output_model.model_validate(
        {
            "tldr": "t",
            "content": "c",
            "payload": {
                "claims": [
                    {"statement": "s", "origin": "founder", "severity": "low", "support": "partial"}
                ],
                "risks": [
                    {"risk": "Competitors copy the circle format", "mitigation": "move fast"},
                    {"risk": "Nobody joins", "mitigation": "pilot"},
                ],
            },
        }
    )
    found = _validated({"market-context": market, "risk-assessment": risks})
    messages = [f.message for f in found]
    assert all(f.severity == "info" for f in found)  # a quality flag, never a drift to decide
    assert any("risk 1 speaks of competition but cites no competitor" in m for m in messages)
    assert not any("risk 2" in m for m in messages)
    # two rows say neither the job nor the gap; the first says its gap but not its job
    assert sum("does not say" in m for m in messages) == 3
    assert any("COMP-08 Plain video call does not say the job" in m for m in messages)
    state = SessionState(outputs={"market-context": market, "risk-assessment": risks})
    rows = list(csv.DictReader(io.StringIO(export(state, "competitors"))))
    assert rows[1]["job, for whom"] == NOT_STATED and rows[0]["gap we use"].startswith("no Power")
    risks.payload.risks[0].competitors = ["COMP-08"]
    assert not any(
        "risk 1" in f.message
        for f in _validated({"market-context": market, "risk-assessment": risks})
    )


def test_the_bundled_run_uses_the_map_in_risks_scores_and_exports(tmp_path, capsys) -> None:
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid, auto_approve=True)
        state = svc.load_state(sid)
    market = state.outputs["market-context"].payload
    ids = [c.id for c in market.competitors]
    assert all(c.job.strip() and c.gap.strip() for c in market.competitors)
    cited = {i for r in state.outputs["risk-assessment"].payload.risks for i in r.competitors}
    scored = {
        i for d in state.outputs["validation-summary"].payload.dimensions for i in d.competitors
    }
    assert cited and cited <= set(ids) and scored and scored <= set(ids)
    assert not [
        f for fs in state.validations.values() for f in fs if f.validator == "competitor_map"
    ]
    pdf = export(state, "validation-pdf")
    assert isinstance(pdf, bytes) and pdf.startswith(b"%PDF")
    out = tmp_path / "competitors.csv"
    assert (
        main(
            [
                "export",
                sid,
                "--format",
                "competitors",
                "--output",
                str(out),
                *replay_cli_args(tmp_path),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["id"] for r in rows] == ids
    assert all(r["job, for whom"] and r["gap we use"] for r in rows)
    assert "risk" in rows[0]["cited by"] and "score: Differentiation" in rows[0]["cited by"]
    # the Linear export keeps the dependencies the CSV and Jira exports keep
    stories = {s["id"]: s for s in csv.DictReader(io.StringIO(export(state, "csv")))}
    linear = list(csv.DictReader(io.StringIO(export(state, "linear"))))
    blocked = [r for r in linear if r["Blocked by"]]
    assert blocked
    for row in linear:
        story = stories[row["Title"].split(" ", 1)[0]]
        deps = story["depends_on"].split()
        assert row["Blocked by"] == ", ".join(deps)
        assert row["Description"].startswith(f"Blocked by: {', '.join(deps)}") == bool(deps)


def test_a_session_without_a_map_has_no_competitor_export(tmp_path) -> None:
    with pytest.raises(InputError, match="no competitor map yet"):
        export(SessionState(), "competitors")
