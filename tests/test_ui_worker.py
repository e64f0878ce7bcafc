"""The background run worker: one run per session, errors as messages, resume after failure."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from test_ui_support import (
    CASSETTE,
    POWER8_IDEA,
    app,
    cassette_without,
    poll,
    service,
    shows,
    use_replay,
)

from haytham.errors import SessionLocked
from haytham.runs.service import Outcome
from haytham.runs.worker import RunWorker


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_replay(tmp_path, monkeypatch)


def test_run_to_gate_1_in_the_background(sessions: Path) -> None:
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="w1")
        worker = RunWorker(svc)
        job = worker.run(sid)
        assert job.alive and job.label == "run"
        done = worker.wait(sid, timeout=60)
        assert done is not None and done.state == "finished" and not done.alive
        assert done.outcome is not None and done.outcome.gate == 1
        assert done.elapsed() > 0 and worker.running() == []
        assert worker.current_stage(sid) is None


def test_a_second_run_of_the_same_session_is_refused(sessions: Path) -> None:
    with service() as svc:
        worker = RunWorker(svc)
        release = threading.Event()

        def slow() -> Outcome:
            release.wait(10)
            return Outcome("s", "running")

        worker.submit("s", "slow", slow)
        with pytest.raises(SessionLocked, match="already running"):
            worker.submit("s", "again", slow)
        assert worker.running() == ["s"]
        worker.submit("t", "other session", lambda: Outcome("t", "done"))
        release.set()
        assert worker.wait("s", 10).state == "finished"
        assert worker.wait("t", 10).outcome.status == "done"


def test_failures_become_messages_and_resume_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partial = cassette_without(tmp_path, "risk-assessment")
    use_replay(tmp_path, monkeypatch, cassette=partial)
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="fails")
    at = app()
    at.query_params["session"] = sid
    at.switch_page("views/run.py").run()
    at.button(key="resume").click().run()
    poll(at, lambda a: bool(a.error))
    message = at.error[0].value
    assert message.startswith("The run stopped:") and "risk\\-assessment" in message  # escaped
    assert "Traceback" not in message
    table = at.dataframe[0].value.set_index("stage")
    assert table.loc["Market context", "status"] == "✓ completed"  # earlier stages are kept
    assert table.loc["Risk assessment", "status"] == "✗ failed"

    monkeypatch.setenv("HAYTHAM_CASSETTE", str(CASSETTE))  # the provider works again
    at.run()
    at.button(key="resume_after_error").click().run()
    poll(at, lambda a: shows(a, "Waiting at **Gate 1**"))


def test_unexpected_errors_are_one_sentence(sessions: Path) -> None:
    with service() as svc:
        worker = RunWorker(svc)

        def boom() -> Outcome:
            raise KeyError("outputs")

        worker.submit("x", "boom", boom)
        job = worker.wait("x", 10)
        assert job.state == "failed" and job.error_type == "KeyError"
        assert job.error.startswith("Unexpected error (KeyError)") and "resume" in job.error
        worker.forget("x")
        assert worker.job("x") is None


def _buggy_page() -> None:
    from frontend_streamlit.components.context import failures

    with failures():
        raise KeyError("payload")


def test_a_bug_in_a_page_is_one_sentence() -> None:
    at = AppTest.from_function(_buggy_page, default_timeout=30).run()
    assert not at.exception
    assert at.error[0].value.startswith("Unexpected error \\(KeyError\\)")  # shown escaped, as text


def test_pages_while_a_run_is_in_progress(sessions: Path) -> None:
    from frontend_streamlit.components.context import backend as app_backend

    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="busy")
    backend = app_backend()  # the app's own cached service and worker, as its pages get them
    release = threading.Event()

    def slow_run() -> Outcome:
        release.wait(30)
        return backend.service.run(sid)

    backend.worker.submit(sid, "run", slow_run)
    try:
        at = app(sid, "views/run.py")
        assert shows(at, "runs in the background")
        assert at.expander[0].label.startswith("Running ·") and not at.status
        at.switch_page("views/gate_1.py").run()
        assert shows(at, "A run of this session is in progress")
        assert not [b for b in at.button if (b.key or "").startswith("approve_")]
        at.switch_page("views/sessions.py").run()
        row = at.dataframe[0].value.set_index("session").loc[sid]
        assert bool(row["running"])
        at.selectbox(key="sessions_pick").set_value(sid).run()
        assert at.button(key="delete").disabled
    finally:
        release.set()
    at.switch_page("views/run.py")
    poll(at, lambda a: shows(a, "Waiting at **Gate 1**"))
