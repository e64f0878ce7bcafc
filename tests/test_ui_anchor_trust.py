"""Gate 1 says which anchor entries are not in the idea, and which stages an anchor change made
stale, with one action that redoes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ui_support import (
    app,
    at_gate,
    cassette_entries,
    poll,
    service,
    session_at,
    shows,
    texts,
    use_replay,
    write_cassette,
)


@pytest.fixture()
def invented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Gate 1 of a session whose anchor quotes something the idea never says."""
    entries = cassette_entries()
    for entry in entries:
        if entry["agent"] == "anchor-extraction":
            for item in entry["response"]:
                if "input" in item:
                    item["input"]["invariants"][0]["source"] = "open sign-up on the app store"
    use_replay(tmp_path, monkeypatch, cassette=write_cassette(tmp_path / "c.jsonl", entries))
    return session_at(1)


def test_an_invented_source_is_flagged_and_asked_about(invented: str) -> None:
    at = app(invented, "views/gate_1.py")
    assert not at.exception
    assert shows(at, "not found in your idea")
    assert any(r.label.startswith("What did you mean by access_model") for r in at.radio)


def test_a_changed_anchor_marks_stages_stale_until_rerun(invented: str, tmp_path: Path) -> None:
    with service() as svc:
        svc.clarify(invented, "session_medium", "2")
        assert svc.status(invented)["stale"] == []  # a clarification re-checks the phase
        svc.decide(
            invented,
            1,
            {"kind": "edit", "invariant": "orchestrator_role", "value": "a co-host runs them"},
            continue_run=False,
        )
    at = app(invented, "views/gate_1.py")
    assert shows(at, "This gate's checks are stale"), texts(at)
    at.button(key="rerun_stale").click().run()
    assert not at.exception
    at.switch_page("views/run.py")
    poll(at, at_gate(1))
    at.switch_page("views/gate_1.py").run()
    assert not shows(at, "This gate's checks are stale")
    events = (tmp_path / "sessions" / invented / "events.jsonl").read_text().splitlines()
    assert any(json.loads(e)["type"] == "cleared_from" for e in events)
