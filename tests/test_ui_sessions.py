"""Sessions page: list, open, fork, delete with confirmation; tabs keep their own session."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ui_support import app, at_gate, poll, service, session_at, shows, use_replay


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def test_empty_list_points_to_a_new_idea(sessions: Path) -> None:
    at = app(page="views/sessions.py")
    assert not at.exception and shows(at, "No sessions yet")


def test_list_open_fork_and_delete(sessions: Path) -> None:
    session_at(1, sid="first")
    session_at(2, sid="second")
    at = app(page="views/sessions.py")
    table = at.dataframe[0].value
    assert set(table["session"]) == {"first", "second"}
    row = table.set_index("session").loc["second"]
    assert row["status"] == "waiting at Gate 2" and row["gate"] == 2
    assert row["idea"].startswith("I'm a psychologist") and row["updated"] is not None

    at.selectbox(key="sessions_pick").set_value("second")
    at.button(key="open_session").click().run()
    assert not at.exception
    assert at.title[0].value == "Gate 2 · WHAT"
    assert at.session_state["selected_session"] == "second"

    at.switch_page("views/sessions.py").run()
    at.selectbox(key="sessions_pick").set_value("second")
    at.selectbox(key="fork_stage").set_value("capability-model")
    at.button(key="fork").click().run()
    assert not at.exception
    forked = at.session_state["selected_session"]
    assert forked not in ("first", "second") and (sessions / forked).is_dir()
    assert at.title[0].value == "Run"  # the fork opens on its own …
    assert shows(at, f"Forked `second` from `capability-model` as `{forked}`")
    at.switch_page("views/run.py")
    poll(at, at_gate(2))  # … and its run started on its own (no Resume)
    table = at.dataframe[0].value.set_index("stage")
    for stage in ("Idea analysis", "Concept anchor", "Validation summary", "MVP scope"):
        assert table.loc[stage, "status"] == "↳ inherited from second", stage
    assert table.loc["Capability model", "status"] == "✓ completed"
    assert shows(at, "6 steps inherited, done there")
    at.switch_page("views/sessions.py").run()
    assert at.selectbox(key="sessions_pick").value == forked  # the picker follows the fork
    assert at.dataframe[0].value.set_index("session").loc[forked, "forked_from"] == "second"

    at.switch_page("views/sessions.py").run()
    at.selectbox(key="sessions_pick").set_value("first").run()
    assert at.button(key="delete").disabled  # needs the confirmation first
    at.checkbox(key="delete_sure_first").check().run()
    at.button(key="delete").click().run()
    assert not at.exception and shows(at, "Deleted first.")
    assert not (sessions / "first").exists()
    assert set(at.dataframe[0].value["session"]) == {"second", forked}


def test_two_tabs_keep_their_own_session(sessions: Path) -> None:
    session_at(1, sid="alpha")
    session_at(2, sid="beta")
    tab_a = app("alpha", "views/run.py")
    tab_b = app("beta", "views/run.py")
    assert shows(tab_a, "Waiting at **Gate 1**") and shows(tab_b, "Waiting at **Gate 2**")
    tab_a.switch_page("views/fidelity.py").run()
    tab_b.run()
    assert tab_a.session_state["selected_session"] == "alpha"
    assert tab_b.session_state["selected_session"] == "beta"
    assert tab_a.query_params["session"] == "alpha"


def test_a_broken_session_is_listed_with_its_problem(sessions: Path) -> None:
    session_at(1, sid="ok")
    with service() as svc:
        broken = svc.create_session(
            "a perfectly fine idea about a tool for the local library that lends board games",
            session_id="broken",
        )
    (sessions / broken / "state.db").write_text("not a database")
    at = app(page="views/sessions.py")
    assert not at.exception
    table = at.dataframe[0].value.set_index("session")
    assert table.loc["broken", "status"].startswith("unreadable")
    at.query_params["session"] = "broken"
    at.switch_page("views/gate_1.py").run()
    assert not at.exception
    assert any("unreadable" in e.value for e in at.error)
