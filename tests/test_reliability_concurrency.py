"""Concurrency (issue 8): one session is worked on by one process (or thread) at a time — a second
one is refused with a clear message and writes nothing — while different sessions run in
parallel through one service without touching each other's files."""

from __future__ import annotations

import fcntl
import importlib.util
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from faults import assert_consistent, read_events
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, replay_settings

import haytham.agents.caller as caller
from haytham.app import make_service
from haytham.cli import main
from haytham.errors import SessionLocked
from haytham.storage.folder import SessionFiles

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "concurrency.py"


def _bench():
    """``benchmarks/concurrency.py`` (not a package), loaded once."""
    if "bench_concurrency" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_concurrency", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while defining
        spec.loader.exec_module(module)
    return sys.modules["bench_concurrency"]


def _hold_in(agent: str, entered: Path, release: Path) -> None:
    """Patch (in the caller's process): ``agent``'s model waits until ``release`` exists."""
    real = caller.build_model

    def build(settings, tier, name, **kw):  # noqa: ANN001
        if name == agent:
            entered.write_text(str(os.getpid()))
            deadline = time.monotonic() + 60
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return real(settings, tier, name, **kw)

    caller.build_model = build


def _wait_for(path: Path, proc) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline and proc.is_alive():
        time.sleep(0.02)
    assert path.exists(), "the first process never reached the held stage"


def test_a_second_process_resuming_the_same_session_is_refused(tmp_path, capsys):
    sessions = tmp_path / "sessions"
    opts = ["--provider", "replay", "--cassette", str(POWER8_RUN), "--sessions-dir", str(sessions)]
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="shared")
    root = sessions / sid
    entered, release = tmp_path / "entered", tmp_path / "release"

    def first() -> None:
        _hold_in("risk-assessment", entered, release)
        os._exit(main(["resume", sid, *opts]))

    def second() -> None:
        os._exit(main(["resume", sid, *opts]))

    fork = multiprocessing.get_context("fork")
    a = fork.Process(target=first)
    a.start()
    _wait_for(entered, a)
    events_before = (root / "events.jsonl").read_bytes()
    files_before = sorted(p.relative_to(root) for p in root.rglob("*"))

    b = fork.Process(target=second)  # a real second process
    b.start()
    b.join(60)
    assert b.exitcode == 3
    capsys.readouterr()
    assert main(["resume", sid, *opts]) == 3  # and this one
    err = capsys.readouterr().err
    assert f"Session shared is busy in another process (pid {a.pid})" in err
    assert "wait for it to finish, then try again" in err and "Traceback" not in err
    assert main(["approve", sid, "--gate", "1", *opts]) == 3
    assert main(["status", sid, *opts]) == 0  # reading never needs the lock
    assert "risk-assessment" in capsys.readouterr().out
    assert (root / "events.jsonl").read_bytes() == events_before  # the refused wrote nothing
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == files_before

    release.write_text("go")
    a.join(60)
    assert a.exitcode == 0
    state = assert_consistent(root)
    assert state["status"] == "waiting_gate_1"
    runs = [
        (e["type"], e["stage"])
        for e in read_events(root)
        if e["type"] in ("stage_started", "stage_completed")
    ]
    stages = [s for _, s in runs if not s.startswith(("verify-", "validate-input"))]
    assert all(n == 2 for n in Counter(stages).values())  # each ran once: started, completed
    for (kind, stage), (next_kind, next_stage) in zip(runs, runs[1:], strict=False):
        if kind == "stage_started":  # never interleaved with another run
            assert (next_kind, next_stage) == ("stage_completed", stage)


def test_two_threads_on_one_session_one_is_refused(tmp_path):
    entered, release = tmp_path / "entered", tmp_path / "release"
    real = caller.build_model
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="threads")
        try:
            _hold_in("market-context", entered, release)
            outcome: dict[str, object] = {}
            worker = threading.Thread(target=lambda: outcome.setdefault("out", svc.run(sid)))
            worker.start()
            deadline = time.monotonic() + 60
            while not entered.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            with pytest.raises(SessionLocked, match="busy in another process"):
                svc.run(sid)
            with pytest.raises(SessionLocked):
                svc.clarify(sid, "session_medium", "1")
            release.write_text("go")
            worker.join(60)
        finally:
            caller.build_model = real
    assert outcome["out"].gate == 1  # type: ignore[attr-defined]
    assert_consistent(tmp_path / "sessions" / sid)


def test_sessions_run_concurrently_and_each_keeps_its_own_files(tmp_path):
    report = _bench().run(tmp_path / "sessions", n_sessions=3, workers=3)
    assert report.errors == {} and report.problems == {}
    for n in range(3):
        root = tmp_path / "sessions" / f"bench-{n:03d}"
        state = assert_consistent(root)
        assert state["session_id"] == root.name
        assert state["idea"].endswith(f"concurrency-marker-{n:03d}.")


@pytest.mark.slow
def test_twenty_concurrent_sessions_through_one_service(tmp_path):
    report = _bench().run(tmp_path / "sessions", n_sessions=20, workers=20)
    assert report.errors == {} and report.problems == {}
    assert report.as_dict()["sessions_ok"] == 20


def test_a_reader_peeking_at_the_lock_never_refuses_a_writer(tmp_path):
    """``status`` (``is_busy``) takes a shared lock for an instant; a writer that arrives in that
    instant must still get the session."""
    files = SessionFiles(tmp_path, "peek")
    reader = os.open(tmp_path / ".lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(reader, fcntl.LOCK_SH)
    threading.Timer(0.015, lambda: os.close(reader)).start()  # the peek ends
    with files.lock():  # the writer got in
        assert files.is_busy()
    holder = SessionFiles(tmp_path, "peek")
    busy = pytest.raises(SessionLocked, match="busy in another process")
    with holder.lock(), busy, files.lock():  # a real holder is still refused
        pass
