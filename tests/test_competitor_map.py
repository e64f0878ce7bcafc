"""The competitor map: typed competitors with ids that risk-assessment and validation-summary
cite; code numbers them and relinks the citations, and drops a citation that names nothing."""

from __future__ import annotations

from pipeline_helpers import POWER8_IDEA, replay_settings

from haytham.app import make_service
from haytham.export import export
from haytham.stages import BY_SLUG, StageView
from haytham.stages.market_context import MarketContext

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
