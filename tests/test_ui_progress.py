"""Run page progress (estimates from past runs, elapsed time, icons), forks in the status, replay
mode on New idea and Retry, the model-quality notice, the stage count and the toolbar."""

from __future__ import annotations

import re
import threading
import tomllib
from pathlib import Path

import pytest
from test_ui_support import (
    FRONTEND,
    POWER8,
    POWER8_IDEA,
    app,
    cassette_without,
    poll,
    service,
    session_at,
    shows,
    texts,
    ui_env,
    use_replay,
)

from haytham.runs.progress import Estimate, stage_estimates
from haytham.runs.service import Outcome
from haytham.stages import ANCHOR_AGENT, STAGES
from haytham.storage.folder import SessionStore

FIRST = STAGES[0]
WHEN_CASSETTE = POWER8.parent / "evals" / "baseline" / "pipeline.jsonl"  # when: ["McTaggart"]
OTHER_IDEA = (
    "A command line tool that turns a git history into a readable changelog for the users of "
    "a small open source library, grouped by release."
)


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def _past_run(sessions: Path, sid: str, provider: str, walls: dict[str, float]) -> None:
    """A finished session's events as another run on this machine left them."""
    files = SessionStore(sessions).create(sid)
    files.append_event("session_created", None, provider=provider)
    for stage, seconds in walls.items():
        files.append_event("stage_started", stage)
        files.append_event("model_call", stage, provider=provider, input_tokens=1)
        files.append_event("stage_completed", stage, wall_ms=seconds * 1000)


# -- forks -----------------------------------------------------------------------------------
def test_a_forks_inherited_stages_are_done_not_pending(sessions: Path) -> None:
    from frontend_streamlit.components.progress import done_count, stage_rows

    session_at(2, sid="parent")
    with service() as svc:
        child = svc.fork("parent", "capability-model", new_id="child")
        summary = svc.status(child)["summary"]
    rows = summary["stages"]
    for slug in (FIRST.slug, ANCHOR_AGENT, "mvp-scope"):
        assert rows[slug]["status"] == "inherited" and rows[slug]["inherited_from"] == "parent"
    assert rows["capability-model"]["status"] == "pending"
    assert summary["forked_from"] == "parent"
    assert done_count(summary) == (6, len(STAGES) + 1)  # five stages and the anchor
    labels = {r["slug"]: r["status"] for r in stage_rows(summary)}
    assert labels["mvp-scope"] == "↳ inherited from parent"
    assert labels["capability-model"] == "○ pending"


# -- progress ----------------------------------------------------------------------------------
def test_every_state_has_its_own_icon() -> None:
    from frontend_streamlit.components.progress import STATES

    icons = [icon for icon, _ in STATES.values()]
    assert len(icons) == len(set(icons))
    for state in ("running", "waiting", "completed", "failed", "pending", "inherited"):
        assert state in STATES


def test_estimates_are_medians_of_other_sessions_on_the_same_provider(sessions: Path) -> None:
    _past_run(sessions, "a", "replay", {FIRST.slug: 100})
    _past_run(sessions, "b", "replay", {FIRST.slug: 300})
    _past_run(sessions, "c", "replay", {FIRST.slug: 200, "market-context": 10})
    _past_run(sessions, "d", "anthropic", {FIRST.slug: 5})  # another provider: not counted
    found = stage_estimates(SessionStore(sessions), "replay", exclude="c")
    assert found[FIRST.slug] == Estimate(200.0, 2)
    assert "market-context" not in found  # only c ran it, and c is the session itself
    assert stage_estimates(SessionStore(sessions), "local") == {}


def test_a_slow_first_stage_shows_elapsed_against_its_estimate(sessions: Path) -> None:
    from frontend_streamlit.components.context import backend as app_backend

    _past_run(sessions, "past", "replay", {FIRST.slug: 180})
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="slow")
    b = app_backend()
    release = threading.Event()

    def first_stage_without_calls() -> Outcome:  # stage 1 started; no model call returned yet
        b.service.store.open(sid).append_event("stage_started", FIRST.slug, rework=False)
        release.wait(30)
        return Outcome(sid, "running")

    b.worker.submit(sid, "run", first_stage_without_calls)
    try:
        at = poll(app(sid, "views/run.py"), lambda a: bool(a.get("progress")))
        bar = at.get("progress")[0].proto.text
        assert re.search(rf"now: {FIRST.title}, [\d.]+ s of about 3 min", bar), bar
        assert (
            f"0 / {len(STAGES) + 1} steps done ({len(STAGES)} stages + the concept anchor)" in bar
        )
        assert at.expander[0].label.startswith("Running ·")  # never a tick: no st.status
        assert not at.status
        table = at.dataframe[0].value.set_index("stage")
        assert table.loc[FIRST.title, "status"] == "▶ running"
        assert table.loc[FIRST.title, "estimate"] == "~3 min (1 past run)"
        assert table.loc["Market context", "estimate"] == "no estimate yet"
        assert shows(at, "0 model calls finished") and shows(at, "counted when it returns")
    finally:
        release.set()
        b.worker.wait(sid, 10)


def test_without_past_runs_there_is_no_estimate_yet(sessions: Path) -> None:
    from frontend_streamlit.components.progress import progress_bar
    from haytham.runs.worker import StageProgress

    running = StageProgress(FIRST.slug, started_at=0.0)
    fraction, text = progress_bar({"stages": {FIRST.slug: {"status": "running"}}}, running, {})
    assert fraction == 0.0 and "so far (no estimate yet" in text


def test_a_session_waiting_at_a_gate_shows_the_gate_waiting(sessions: Path) -> None:
    sid = session_at(1)
    at = app(sid, "views/run.py")
    table = at.dataframe[0].value.set_index("stage")
    assert table.loc["Gate 1 · your decision", "status"] == "‖ waiting for you"
    assert table.loc["Gate 2 · your decision", "status"] == "○ pending"
    assert at.status[0].label.startswith("5 of 11 steps done · waiting at Gate 1")


def test_a_stopped_session_has_no_tick(sessions: Path) -> None:
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="idle")
    at = app(sid, "views/run.py")
    assert not at.status  # neither ✓ nor a spinner for a run that is not running
    assert at.expander[0].label.startswith("Not running")


# -- replay mode -------------------------------------------------------------------------------
def test_replay_offers_only_the_ideas_its_cassette_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ui_env(monkeypatch, tmp_path / "sessions", cassette=WHEN_CASSETTE)
    at = app()
    examples = [b.key for b in at.button if (b.key or "").startswith("example_")]
    assert examples == ["example_Power of 8"]
    assert shows(at, "not offered: Home cooks marketplace, Changelog CLI")

    at.text_area(key="idea_text").input(OTHER_IDEA).run()
    assert at.button(key="start").disabled
    assert any("matches none of them" in w.value for w in at.warning), texts(at)

    at.button(key="example_Power of 8").click().run()
    assert not at.button(key="start").disabled
    assert shows(at, "has a recorded run for this idea")


def test_replay_refuses_an_idea_its_recording_was_not_made_for(sessions: Path) -> None:
    """Issue 28: a cassette recorded without conditions answers every request alike; an idea
    its recorded anchor does not quote is refused before Start, and the covered idea is one
    click away."""
    at = app()
    examples = [b.key for b in at.button if (b.key or "").startswith("example_")]
    assert examples == ["example_Power of 8"]
    at.text_area(key="idea_text").input(OTHER_IDEA).run()
    assert at.button(key="start").disabled
    assert any("the cassette recorded another idea" in w.value for w in at.warning), texts(at)
    assert shows(at, "Ideas this cassette covers")
    at.button(key="covered_Power of 8").click().run()
    assert at.text_area(key="idea_text").value.startswith("I'm a psychologist")
    assert not at.button(key="start").disabled
    assert shows(at, "has a recorded run for this idea; the outputs are that recording")
    assert not sessions.exists() or not [p for p in sessions.iterdir() if p.name != "_tracking"]


def test_a_replay_miss_is_explained_and_retry_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partial = cassette_without(tmp_path, "risk-assessment")
    use_replay(tmp_path, monkeypatch, cassette=partial)
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="misses")
    at = app(sid, "views/run.py")
    at.button(key="resume").click().run()
    poll(at, lambda a: bool(a.error))
    message = at.error[0].value
    assert "no recorded answer for risk\\-assessment" in message
    assert "\\-\\-record" not in message and "matching line" not in message
    assert at.button(key="resume_after_error").disabled
    assert shows(at, "Retry is off")
    at = app(sid, "views/run.py")  # after a reload: the same words from the session's log
    assert "no recorded answer" in at.error[0].value and "record" not in at.error[0].value[-60:]


# -- the model-quality notice, the stage count, the toolbar ------------------------------------
SESSION_PAGES = ["run", "gate_1", "verdict", "gate_2", "gate_3", "gate_4", "stories", "fidelity"]


def test_the_local_model_notice_is_on_every_page_of_a_local_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    ui_env(monkeypatch, sessions, provider="local")
    with service() as svc:  # created on the local model (nothing runs here)
        svc.create_session(POWER8_IDEA, session_id="tiny")
    ui_env(monkeypatch, sessions)  # the app itself replays
    session_at(1, sid="real")
    for page in SESSION_PAGES:
        at = app("tiny", f"views/{page}.py")
        assert not at.exception, page
        notices = [w for w in at.warning if "bundled local model" in w.value]
        assert len(notices) == 1, page
        at = app("real", f"views/{page}.py")
        assert not [w for w in at.warning if "bundled local model" in w.value], page


def test_one_stage_count_everywhere(sessions: Path) -> None:
    wording = f"{len(STAGES)} stages + the concept anchor"
    at = app()
    assert shows(at, wording)
    for source in FRONTEND.rglob("*.py"):
        text = source.read_text("utf-8").lower()
        assert "ten stages" not in text and "11 stages" not in text, source


def test_no_developer_toolbar() -> None:
    config = tomllib.loads((FRONTEND / ".streamlit" / "config.toml").read_text("utf-8"))
    assert config["client"]["toolbarMode"] == "viewer"


def test_streamed_answers_read_as_words_not_json() -> None:
    from frontend_streamlit.components.progress import readable_stream

    partial = '{"problem_statement": "Founders say \\"no\\"\\nto it", "risks": [{"id": "RISK-1", "title": "Lo'
    assert readable_stream(partial) == (
        "problem statement: Founders say 'no' to it, risks: id: RISK-1, title: Lo"
    )
    assert readable_stream("reading the prompt: 40% of 2,000 tokens") == (
        "reading the prompt: 40% of 2,000 tokens"
    )
