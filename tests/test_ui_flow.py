"""The founder's path through the UI (AppTest, replay provider): enter an idea, watch progress,
reach Gate 1, see the amber banner, pick options, confirm, approve, reach Gate 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ui_support import POWER8_IDEA, app, at_gate, gates_json, option, poll, shows, use_replay

from haytham.schemas.anchor import ConceptAnchor


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def test_idea_to_gate_2(sessions: Path) -> None:
    at = app()
    assert at.title[0].value == "New idea"
    at.text_area(key="idea_text").input(POWER8_IDEA)
    at.radio(key="appetite").set_value("small")
    at.button(key="start").click().run()
    assert not at.exception
    assert at.title[0].value == "Run"
    sid = at.query_params["session"]
    sid = sid[0] if isinstance(sid, list) else sid
    assert (sessions / sid / "idea.md").exists()

    poll(at, at_gate(1))
    table = at.dataframe[0].value
    done = table[table["stage"] == "Validation summary"].iloc[0]
    assert "completed" in done["status"] and done["model_calls"] == 1
    assert done["input_tokens"] > 0 and done["output_tokens"] > 0
    assert shows(at, "need clarification before Gate 1")

    at.button(key="to_gate").click().run()
    assert at.title[0].value == "Gate 1 · WHY"
    banner = [w.value for w in at.warning if "Clarification needed" in w.value]
    assert banner, "the amber clarification banner is missing"
    assert any("60% confident" in m.value for m in at.markdown)  # st.badge is markdown
    assert at.button(key="approve_1").disabled
    radios = [r for r in at.radio if r.key and r.key.startswith(f"clarify_{sid}_")]
    assert {r.key.removeprefix(f"clarify_{sid}_") for r in radios} == {
        "interaction_model",
        "session_medium",
    }
    chosen = {}
    for r in radios:  # the last option that gives a value ("leave it open" comes after it)
        r.set_value(option(r, -2))
        chosen[r.key.removeprefix(f"clarify_{sid}_")] = option(r, -2)
    at.button(key="confirm_clarifications").click().run()
    assert not at.exception
    assert shows(at, "Clarified 2 invariant(s)")
    assert not [w for w in at.warning if "Clarification needed" in w.value]

    anchor = ConceptAnchor.model_validate_json((sessions / sid / "concept_anchor.json").read_text())
    for prop, value in chosen.items():
        inv = anchor.invariant(prop)
        assert (inv.value, inv.confidence, inv.user_clarified) == (value, 1.0, True)
    record = gates_json(sessions, sid)["1"]
    assert {c["invariant"] for c in record["clarifications"]} == set(chosen)

    assert not at.button(key="approve_1").disabled
    at.button(key="approve_1").click().run()
    assert not at.exception
    assert at.title[0].value == "Run"
    poll(at, at_gate(2))
    table = at.dataframe[0].value
    for stage in ("MVP scope", "Capability model"):
        assert "completed" in table[table["stage"] == stage].iloc[0]["status"]
    assert gates_json(sessions, sid)["1"]["status"] == "approved"

    at.button(key="to_gate").click().run()
    assert at.title[0].value == "Gate 2 · WHAT"
    assert not at.button(key="approve_2").disabled


def test_leaving_and_returning_shows_the_same_run(sessions: Path) -> None:
    at = app()
    at.text_area(key="idea_text").input(POWER8_IDEA)
    at.button(key="start").click().run()
    sid = at.session_state["selected_session"]
    at.switch_page("views/sessions.py").run()
    assert at.title[0].value == "Sessions"
    at.switch_page("views/run.py").run()  # the tab remembers its session without the URL
    assert at.title[0].value == "Run"
    poll(at, at_gate(1))
    assert shows(at, sid)
