"""`haytham run` / `resume` show each stage as it starts and ends (stderr), `--quiet` shows
nothing, `--json` prints one JSON object per event; library logs never print a traceback."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from pipeline_helpers import POWER8_IDEA, POWER8_RUN, cassette_with, replay_cli_args

from haytham.cli import main
from haytham.runs.progress import (
    EventFollower,
    JsonRenderer,
    PlainRenderer,
    Renderer,
    RichRenderer,
    StageProgress,
    Tracker,
    events_path,
    make_renderer,
    showing_progress,
)
from haytham.stages import STAGES

AMBIGUOUS = ("interaction_model", "session_medium")


def _opts(tmp_path: Path, cassette: Path = POWER8_RUN) -> list[str]:
    return replay_cli_args(tmp_path, cassette)


def _run(tmp_path: Path, sid: str, *extra: str, cassette: Path = POWER8_RUN) -> int:
    return main(
        ["run", "--idea", POWER8_IDEA, "--session-id", sid, *extra, *_opts(tmp_path, cassette)]
    )


def _events(tmp_path: Path, sid: str) -> list[dict]:
    path = tmp_path / "sessions" / sid / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _tokens(events: list[dict], stage: str) -> int:
    return sum(
        e["data"]["input_tokens"] + e["data"]["output_tokens"]
        for e in events
        if e["type"] == "model_call" and e["stage"] == stage
    )


def test_a_non_tty_run_prints_one_line_per_stage_start_and_end(tmp_path, capsys):
    assert _run(tmp_path, "plain", "--auto-approve") == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    events = _events(tmp_path, "plain")
    for spec in STAGES:
        tag = f"[{spec.number:>2}/10] {spec.slug}"
        assert lines.count(f"{tag}: started") == 1, tag
        ended = [ln for ln in lines if ln.startswith(f"{tag}: completed in ")]
        assert len(ended) == 1, tag
        assert f"{_tokens(events, spec.slug):,} tokens" in ended[0]
        assert "1 model call," in ended[0] and "0 retries" in ended[0]
    assert lines.count("[anchor] concept anchor: started") == 1
    for gate, phase in enumerate(("WHY", "WHAT", "HOW", "STORIES"), 1):
        assert any(ln.startswith(f"[gate {gate}] verifying {phase} (") for ln in lines)
        assert f"[gate {gate}] approved (auto-approve)" in lines
    swarm = next(ln for ln in lines if ln.startswith("[gate 2] verifying WHAT (swarm): passed"))
    assert "4 model calls" in swarm and f"{_tokens(events, 'verify-what'):,} tokens" in swarm
    # stdout stays for the result
    assert captured.out.splitlines() == ["session: plain", "status: done"]


def test_quiet_prints_no_progress(tmp_path, capsys):
    assert _run(tmp_path, "quiet", "--auto-approve", "--quiet") == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["session: quiet"]
    assert captured.out.splitlines() == ["session: quiet", "status: done"]


def test_json_prints_one_object_per_event_then_the_outcome(tmp_path, capsys):
    assert _run(tmp_path, "scripted", "--json") == 0
    captured = capsys.readouterr()
    objects = [json.loads(line) for line in captured.out.splitlines()]
    *progress, outcome = objects
    assert outcome == {
        "session_id": "scripted",
        "status": "waiting_gate_1",
        "gate": 1,
        "next_action": "gate_1",
    }
    logged = [e for e in _events(tmp_path, "scripted") if e["type"] != "session_created"]
    assert [(p["event"], p["stage"]) for p in progress] == [(e["type"], e["stage"]) for e in logged]
    done = {p["stage"]: p["progress"] for p in progress if p["event"] == "stage_completed"}
    assert done["idea-analysis"]["status"] == "completed"
    assert done["idea-analysis"]["model_calls"] == 1
    assert done["idea-analysis"]["input_tokens"] + done["idea-analysis"]["output_tokens"] == (
        _tokens(logged, "idea-analysis")
    )
    assert "started" not in captured.err  # no plain progress next to the JSON


def test_a_failed_stage_shows_as_failed_then_resume_shows_it_run(tmp_path, capsys):
    failing = cassette_with(tmp_path, drop_agents={"mvp-scope"}, passing_verifiers=True)
    assert _run(tmp_path, "failing", "--auto-approve", cassette=failing) != 0
    err = capsys.readouterr().err
    failed = [ln for ln in err.splitlines() if ln.startswith("[ 5/10] mvp-scope: failed in ")]
    assert len(failed) == 1 and "No recorded turn" in failed[0]
    assert "Traceback" not in err

    assert main(["status", "failing", *_opts(tmp_path, failing)]) == 0
    out = capsys.readouterr().out
    assert "session failing: failed" in out
    assert "last error: mvp-scope: No recorded turn" in out and "haytham resume failing" in out

    assert main(["resume", "failing", "--auto-approve", *_opts(tmp_path)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert "[ 5/10] mvp-scope: started" in lines
    assert any(ln.startswith("[ 5/10] mvp-scope: completed in ") for ln in lines)
    assert not any("idea-analysis" in ln for ln in lines)  # done before; not run again


def test_a_gate_decision_shows_the_stages_it_runs_on_to(tmp_path, capsys):
    assert _run(tmp_path, "gated", "--quiet") == 0
    for prop in AMBIGUOUS:
        assert main(["clarify", "gated", "--invariant", prop, "--choice", "1", "--quiet"]
                    + _opts(tmp_path)) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["approve", "gated", "--gate", "1", *_opts(tmp_path)]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == "[gate 1] approved"
    assert "[ 5/10] mvp-scope: started" in lines
    assert any(ln.startswith("[gate 2] verifying WHAT (swarm): passed in ") for ln in lines)
    assert "waiting at Gate 2" in captured.out


# -- logging -----------------------------------------------------------------------------------


@pytest.fixture
def noisy_stage(monkeypatch):
    """Every stage first logs a caught exception through Strands' and Haytham's loggers,
    as a failed swarm node's model call does."""
    from haytham.pipeline.runner import StageRunner

    real = StageRunner.run_stage

    def run_stage(self, spec, state, received=None):
        try:
            raise RuntimeError("node exploded")
        except RuntimeError:
            logging.getLogger("strands.multiagent.swarm").exception("node failed")
            logging.getLogger("haytham.models.accounting").exception("call sink failed")
        return real(self, spec, state, received)

    monkeypatch.setattr(StageRunner, "run_stage", run_stage)


def test_library_exceptions_print_no_traceback(tmp_path, capsys, noisy_stage):
    root_level = logging.getLogger().level
    assert _run(tmp_path, "noisy", "--until", "gate-1") == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "node exploded" not in err
    assert "node failed" not in err  # a library's error below CRITICAL: nothing
    assert "error: call sink failed" in err  # Haytham's own: one line
    assert logging.getLogger().level == root_level  # put back after the command


def test_debug_shows_library_logs_with_tracebacks(tmp_path, capsys, noisy_stage):
    assert _run(tmp_path, "debugged", "--until", "gate-1", "--debug") == 0
    err = capsys.readouterr().err
    assert "ERROR strands.multiagent.swarm: node failed" in err
    assert "Traceback" in err and "RuntimeError: node exploded" in err


@pytest.mark.parametrize("where", ["top", "sub"])
def test_debug_prints_the_traceback_of_an_error(tmp_path, capsys, where):
    argv = ["status", "nosuch", *_opts(tmp_path)]
    assert main(argv) == 2  # SessionNotFound's exit code
    quiet = capsys.readouterr().err
    assert "Traceback" not in quiet and "error: No session nosuch" in quiet
    assert main(["--debug", *argv] if where == "top" else [*argv, "--debug"]) == 2
    loud = capsys.readouterr().err
    assert "Traceback" in loud and "SessionNotFound" in loud
    assert "error: No session nosuch" in loud


def test_an_unexpected_exception_is_one_sentence_unless_debug(tmp_path, capsys, monkeypatch):
    import haytham.cli as cli

    def broken(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_print_status", broken)
    (tmp_path / "sessions").mkdir()
    assert _run(tmp_path, "bug", "--until", "gate-1", "--quiet") == 0
    capsys.readouterr()
    assert main(["status", "bug", *_opts(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected RuntimeError: boom" in err
    with pytest.raises(RuntimeError, match="boom"):
        main(["status", "bug", "--debug", *_opts(tmp_path)])


# -- the parts ---------------------------------------------------------------------------------


def _ev(type_: str, stage: str | None = "risk-assessment", **data) -> dict:
    return {"ts": "2026-01-01T00:00:00.000+00:00", "type": type_, "stage": stage, "data": data}


class Recorder(Renderer):
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def event(self, event, row):
        self.calls.append(("event", event["type"]))

    def stage_started(self, row):
        self.calls.append(("started", row))

    def stage_changed(self, row):
        self.calls.append(("changed", row))

    def stage_ended(self, row):
        self.calls.append(("ended", row))

    def milestone(self, text):
        self.calls.append(("milestone", text))

    def open(self):
        self.calls.append(("open", None))

    def close(self):
        self.calls.append(("close", None))


def test_the_tracker_adds_up_calls_tokens_and_retries_per_stage():
    rec = Recorder()
    tracker = Tracker(rec, clock=iter([10.0, 99.0]).__next__)
    call = {"input_tokens": 100, "output_tokens": 20, "ok": True}
    tracker.feed(_ev("stage_started", rework=False))
    tracker.feed(_ev("model_call", **call, retries=1))
    tracker.feed(_ev("stage_reask", problems=["x"]))
    tracker.feed(_ev("model_call", **{**call, "ok": False}, retries=0))
    tracker.feed(
        _ev("stage_completed", wall_ms=1500.0, status="needs_attention", problems=["RISK-2 bad"])
    )
    tracker.feed(_ev("gate_command", None, gate=1, kind="approve", note=""))
    ended = next(r for kind, r in rec.calls if kind == "ended")
    assert isinstance(ended, StageProgress)
    assert (ended.model_calls, ended.failed_calls, ended.tokens, ended.retries) == (2, 1, 240, 2)
    assert ended.elapsed_s == 1.5 and ended.status == "needs_attention"
    assert "RISK-2 bad" in ended.detail
    assert [kind for kind, _ in rec.calls if kind != "event"] == [
        "started",
        "changed",
        "changed",
        "changed",
        "ended",
        "milestone",
    ]
    assert ("milestone", "[gate 1] approved") in rec.calls


def test_a_failure_without_wall_time_uses_the_observed_elapsed_time():
    rec = Recorder()
    tracker = Tracker(rec, clock=iter([10.0, 13.5]).__next__)
    tracker.feed(_ev("stage_started", "verify-what", strategy="swarm"))
    tracker.feed(_ev("stage_failed", "verify-what", error={"message": "it broke\n badly"}))
    ended = next(r for kind, r in rec.calls if kind == "ended")
    assert ended.title == "[gate 2] verifying WHAT (swarm)"
    assert (ended.status, ended.elapsed_s, ended.detail) == ("failed", 3.5, "it broke badly")


def _append(path: Path, *lines: str) -> None:
    with path.open("a") as fh:
        fh.write("".join(lines))


def test_the_follower_starts_at_the_end_and_waits_for_whole_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    _append(path, json.dumps(_ev("old")) + "\n")
    seen: list[str] = []
    follower = EventFollower(path, lambda e: seen.append(e["type"]), interval=60)
    follower.start()
    whole, torn = json.dumps(_ev("new")) + "\n", json.dumps(_ev("later"))
    _append(path, whole, torn[:10])
    follower.stop()  # the thread never polled (interval 60): stop drains
    assert seen == ["new"]
    _append(path, torn[10:] + "\n", "not json\n")
    follower.poll()
    assert seen == ["new", "later"]


def test_a_failing_renderer_stops_the_progress_not_the_command(tmp_path):
    path = tmp_path / "events.jsonl"
    path.touch()

    class Broken(Renderer):
        def stage_started(self, row):
            raise BrokenPipeError("reader left")

    with showing_progress(path, Broken(), interval=0.01) as follower:
        _append(path, json.dumps(_ev("stage_started")) + "\n")
    assert isinstance(follower.error, BrokenPipeError)


def test_progress_is_drained_and_closed_when_the_command_is_interrupted(tmp_path):
    path = tmp_path / "events.jsonl"
    path.touch()
    rec = Recorder()
    with pytest.raises(KeyboardInterrupt), showing_progress(path, rec, interval=60):
        _append(path, json.dumps(_ev("stage_started")) + "\n")
        raise KeyboardInterrupt
    assert [kind for kind, _ in rec.calls] == ["open", "event", "started", "close"]


def test_no_session_means_no_progress(tmp_path):
    assert events_path(tmp_path, "missing") is None
    assert events_path(tmp_path, "../evil") is None
    with showing_progress(None, PlainRenderer(io.StringIO())) as follower:
        assert follower is None


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_renderer_follows_the_mode_and_the_terminal(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    out, err = io.StringIO(), io.StringIO()
    assert type(make_renderer("quiet", stdout=out, stderr=err)) is Renderer
    assert isinstance(make_renderer("json", stdout=out, stderr=err), JsonRenderer)
    assert isinstance(make_renderer("auto", stdout=out, stderr=err), PlainRenderer)
    assert isinstance(make_renderer("auto", stdout=out, stderr=_Tty()), RichRenderer)


def test_the_live_line_shows_the_running_stage_and_its_elapsed_seconds():
    from rich.console import Console

    now = [100.0]
    screen = io.StringIO()
    renderer = RichRenderer(
        Console(file=screen, force_terminal=True, width=120, color_system=None),
        clock=lambda: now[0],
    )
    renderer.open()
    try:
        tracker = Tracker(renderer, clock=lambda: now[0])
        tracker.feed(_ev("stage_started", rework=False))
        tracker.feed(_ev("model_call", input_tokens=1000, output_tokens=234))
        now[0] = 112.0
        view = Console(file=io.StringIO(), width=120, color_system=None)
        view.print(renderer)
        live = view.file.getvalue()
        assert "[ 3/10] risk-assessment  12s  1 model call, 1,234 tokens, 0 retries" in live
        tracker.feed(_ev("stage_completed", wall_ms=12000.0, status="completed", problems=[]))
        tracker.feed(_ev("gate_command", None, gate=2, kind="override", auto=True))
    finally:
        renderer.close()
    shown = screen.getvalue()
    assert "✓ [ 3/10] risk-assessment: completed in 12.0s" in shown
    assert "» [gate 2] blocking items overridden (auto-approve)" in shown
