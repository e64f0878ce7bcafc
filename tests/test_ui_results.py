"""Verdict, Stories and Fidelity pages on a finished session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ui_support import app, service, session_at, shows, use_replay

from haytham.reports.export import FORMATS
from haytham.schemas.envelope import AnchorComplianceReport, StageOutput
from haytham.state import SessionState


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    use_replay(tmp_path, monkeypatch)
    return session_at(None)


def test_verdict_go_with_scorecard(finished: str) -> None:
    at = app(finished, "views/verdict.py")
    assert not at.exception
    assert any("GO" in m.value and "badge" in m.value for m in at.markdown)
    scorecard = at.dataframe[0].value
    assert list(scorecard.columns) == ["name", "score", "evidence", "competitors"]
    assert len(scorecard) >= 3
    assert "COMP-01" in scorecard[scorecard["name"] == "Differentiation"].iloc[0]["competitors"]
    assert not [b for b in at.button if b.key == "proceed_anyway"]
    competitors = at.dataframe[-1].value  # the competitor map, sortable, with its ids
    assert list(competitors.columns)[:3] == ["id", "competitor", "job, for whom"]
    assert all(i.startswith("COMP-") for i in competitors["id"])
    assert all(competitors["job, for whom"]) and all(competitors["gap we use"])
    assert "risk" in competitors.iloc[0]["cited by"]  # the bundled run cites the map
    assert len(at.get("download_button")) == 2  # the validation PDF and the map's CSV
    assert not any(d.proto.disabled for d in at.get("download_button"))


def test_stories_table_filters_traceability_and_exports(finished: str) -> None:
    at = app(finished, "views/stories.py")
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["order"]) == list(range(1, len(table) + 1))
    assert table.iloc[0]["id"] == "STORY-001"
    position = {sid: n for n, sid in enumerate(table["id"])}
    for _, row in table.iterrows():  # dependencies come first
        for dep in filter(None, row["depends_on"].split(", ")):
            assert position[dep] < position[row["id"]]

    trace = at.dataframe[1].value
    assert {"capability-model (Gate 2)", "architecture-decisions (Gate 3)"} <= set(
        trace["defined in"]
    )
    cap = trace[trace["implements"] == "CAP-F-001"].iloc[0]
    assert cap["name"] == "Invite existing patients"
    assert cap["review"] == f"./gate_2?session={finished}"

    layer = sorted(table["layer"].unique())[0]
    at.multiselect(key="filter_layer").set_value([layer]).run()
    filtered = at.dataframe[0].value
    assert 0 < len(filtered) <= len(table) and set(filtered["layer"]) == {layer}

    downloads = [e for e in at.get("download_button")]
    assert len(downloads) == len(FORMATS)
    assert all(not d.proto.disabled for d in downloads)


def test_stories_page_before_stories_offers_markdown_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_replay(tmp_path, monkeypatch)
    sid = session_at(2)
    at = app(sid, "views/stories.py")
    assert not at.exception and shows(at, "No stories yet")
    enabled = [not d.proto.disabled for d in at.get("download_button")]
    # Markdown, JSON, three story CSVs, the competitor map (ready), then the validation report
    # (ready) and the specification
    assert enabled == [True, True, False, False, False, True, True, False]


def test_fidelity_matrix_cost_and_missing_divergence(finished: str) -> None:
    at = app(finished, "views/fidelity.py")
    assert not at.exception
    assert shows(at, "No divergence curve for this session")
    matrix = at.dataframe[0].value
    assert "INV-1 access_model" in matrix.index
    assert matrix.shape[1] == 10
    assert set(matrix.loc["INV-1 access_model"]) <= {"✓ honored", "· not mentioned"}
    cost = at.dataframe[1].value
    assert (cost["stage"] == "Story generation").any()
    with service() as svc:
        totals = svc.status(finished)["summary"]["totals"]
    assert cost["model calls"].sum() == totals["model_calls"]  # verifiers and checks included
    assert "None" not in cost["time"].tolist()  # a step not run here says so (issue 28)


def test_fidelity_draws_the_divergence_curve_when_present(finished: str, tmp_path: Path) -> None:
    from frontend_streamlit.components.fidelity_data import compliance_matrix, divergence_frame

    curve = divergence_frame(
        {
            "mvp-scope": {"idea": 0.8, "anchor": 0.9},
            "idea-analysis": {"idea": 0.95, "anchor": 0.93},
            "story-generation": 0.6,
        }
    )
    assert list(curve.index) == ["01 idea-analysis", "05 mvp-scope", "10 story-generation"]
    assert curve.loc["10 story-generation", "anchor"] == 0.6

    with service() as svc:
        real = svc.load_state(finished).outputs

    def reporting(slug: str, **report: object) -> StageOutput:
        """The finished run's output of ``slug`` with this anchor-compliance report."""
        compliance = AnchorComplianceReport.model_validate(report)
        return real[slug].model_copy(update={"anchor_compliance": compliance})

    state = SessionState.of(
        {
            "anchor": {
                "intent": {"goal": "Circles of eight"},
                "invariants": [
                    {"property": p, "value": "v", "source": "s", "confidence": 1.0}
                    for p in ("group_structure", "session_medium")
                ],
            },
            "outputs": {
                "mvp-scope": reporting(
                    "mvp-scope",
                    invariants_preserved=["group_structure"],
                    invariants_overridden=[{"invariant": "INV-2", "reason": "x"}],
                ),
                "capability-model": reporting("capability-model"),
            },
            "verifications": {
                "WHAT": {
                    "phase": "WHAT",
                    "passed": False,
                    "invariants_violated": [
                        {
                            "invariant": "group_structure",
                            "violation": "groups of any size",
                            "severity": "blocking",
                            "stage": "capability-model",
                        }
                    ],
                }
            },
        }
    )
    matrix = compliance_matrix(state)
    assert matrix.loc["INV-1 group_structure"].tolist() == ["✓ honored", "✗ violated"]
    assert matrix.loc["INV-2 session_medium"].tolist() == ["↻ overridden", "· not mentioned"]

    summary = Path(tmp_path / "sessions" / finished / "summary.json")
    assert json.loads(summary.read_text())["divergence"] == {}
