"""History and panel agree (issue 28): at every gate a replay scenario waits at, the decision
panel's count of open items and the history's "Gate N opened" line say the same, because both
read one computation (:func:`haytham.pipeline.gates.gate_items`); a gate decided before a fork
is "carried over", never "not opened yet" above its approval."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from replay_scenarios import build_scenarios
from test_ui_support import app, service, shows, texts, ui_env

WAITING = {"gate1": 1, "nogo": 1, "gate3": 3, "changed": 2, "fork": 2}
PANEL_OPEN = re.compile(r"\*\*(\d+) blocking items?\*\* to resolve")
HISTORY_OPEN = re.compile(r"^(\d+) blocking items? to resolve$")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agree")
    build_scenarios(root)
    return root


def _panel_open(at) -> int:  # noqa: ANN001 — an AppTest
    for text in texts(at):
        found = PANEL_OPEN.search(text)
        if found:
            return int(found[1])
    assert shows(at, "Nothing blocks this gate") or shows(at, "Every blocking item is"), texts(at)
    return 0


def _history_open(details: tuple[str, ...]) -> int:
    for line in details:
        found = HISTORY_OPEN.match(line)
        if found:
            return int(found[1])
    assert "Nothing blocking" in details, details
    return 0


@pytest.mark.parametrize(("sid", "gate"), WAITING.items())
def test_the_history_counts_what_the_panel_lists(
    scenarios: Path, sid: str, gate: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, scenarios / "sessions", cassette=scenarios / "cassette.jsonl")
    at = app(sid, f"views/gate_{gate}.py")
    assert not at.exception, at.exception
    with service() as svc:
        history = svc.gate_history(sid, gate)
    opened = [e for e in history.entries if e.kind == "opened"][-1]
    later = history.entries[history.entries.index(opened) + 1 :]
    assert not [e for e in later if e.kind not in ("opened",)], later  # nothing decided since
    assert _history_open(opened.details) == _panel_open(at), (opened.details, texts(at))


def test_a_scenario_with_open_ambiguities_counts_them(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case the issue saw: Gate 1 with ambiguities is not "Nothing blocking"."""
    ui_env(monkeypatch, scenarios / "sessions", cassette=scenarios / "cassette.jsonl")
    with service() as svc:
        state = svc.load_state("nogo")
        history = svc.gate_history("nogo", 1)
    assert state.anchor is not None and state.anchor.open_ambiguities()
    opened = [e for e in history.entries if e.kind == "opened"][-1]
    assert _history_open(opened.details) > len(state.anchor.open_ambiguities())


def test_a_forks_inherited_gate_is_carried_over_not_unopened(
    scenarios: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, scenarios / "sessions", cassette=scenarios / "cassette.jsonl")
    at = app("fork", "views/gate_1.py")
    assert not at.exception
    assert shows(at, "Gate 1: decided before this session (carried over)"), texts(at)
    assert not shows(at, "not opened yet")
    assert shows(at, "Approved Gate 1")
