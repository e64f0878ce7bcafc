"""Tokens so far while a call streams: the accounting wrapper reports the output received, the
service keeps the call in progress per session (the Run page shows it), and forgets it when the
call returns. On the local model, the text idea analysis (stage 1) writes is on the Run page
while it streams (issue 28)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import test_ui_support  # noqa: F401  (first: the app's pages import from frontend_streamlit)
from pipeline_helpers import POWER8_IDEA, replay_settings
from test_models_accounting import FaultyModel, run_agent

from haytham.app import make_service
from haytham.models.accounting import PROGRESS_STEP, TAIL_CHARS, AccountedModel, ModelCall
from haytham.runs.progress import LiveCalls


def test_output_tokens_are_reported_while_the_call_streams() -> None:
    seen: list[int] = []
    calls: list[ModelCall] = []
    answer = "word " * 200  # 1,000 characters: about 250 tokens
    model = AccountedModel(
        FaultyModel([], answer=answer),
        provider="anthropic",
        model_id="claude-x",
        tier="light",
        agent="critic",
        on_call=calls.append,
        on_progress=seen.append,
        retry_base_delay=0.0,
    )
    run_agent(model)
    assert seen and seen == sorted(seen) and seen[-1] <= len(answer) // 4 + 1
    assert all(b - a >= PROGRESS_STEP for a, b in zip(seen, seen[1:], strict=False))
    assert len(calls) == 1


def test_the_service_holds_the_call_in_progress_and_forgets_it_after(tmp_path, monkeypatch):
    heard: list[tuple[str, int | None]] = []
    original = LiveCalls.reporter

    def recording(self, session_id):
        report = original(self, session_id)

        def both(row, tokens):
            heard.append((row, tokens))
            report(row, tokens)

        return both

    monkeypatch.setattr(LiveCalls, "reporter", recording)
    with make_service(replay_settings(tmp_path)) as svc:
        sid = svc.create_session(POWER8_IDEA)
        svc.run(sid)
        assert svc.live_call(sid) is None  # nothing streams between calls
    first = [t for row, t in heard if row == "idea-analysis"]
    assert first[-1] is None and any(t and t > 0 for t in first)  # tokens, then the end


def test_live_calls_keep_when_a_call_started() -> None:
    live = LiveCalls()
    report = live.reporter("s1")
    report("mvp-scope", 16)
    started = live.get("s1").since
    report("mvp-scope", 48)
    now = live.get("s1")
    assert (now.row, now.tokens, now.since) == ("mvp-scope", 48, started)
    assert live.get("s2") is None
    report("mvp-scope", None)
    assert live.get("s1") is None


def test_the_streamed_text_is_kept_for_the_run_page() -> None:
    """Issue 28: the text a stage is generating is visible while it streams."""
    tails: list[str] = []
    answer = " ".join(f"word{n}" for n in range(300))
    model = AccountedModel(
        FaultyModel([], answer=answer),
        provider="anthropic",
        model_id="claude-x",
        tier="light",
        agent="critic",
        on_text=tails.append,
        retry_base_delay=0.0,
    )
    run_agent(model)
    assert tails and all(0 < len(t) <= TAIL_CHARS for t in tails)
    assert all(t in answer for t in tails)  # the tail of what came so far
    assert answer.endswith(tails[-1])
    live = LiveCalls()
    report, keep = live.reporter("s1"), live.text_sink("s1")
    report("idea-analysis", 16)
    keep("idea-analysis", "…the idea is")
    report("idea-analysis", 32)  # more tokens keep the text until the next tail
    assert live.get("s1").text == "…the idea is"
    report("idea-analysis", None)
    assert live.get("s1") is None


def _wait_for(condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return found


class HeldStream:
    """A llama-server stand-in whose chat completions stream the first part of an answer, then
    hold until released (a stage the page looks at mid-stream), then end it."""

    FIRST = '{"tldr": "A coaching app that walks a psychologist\'s patients through '
    REST = 'the Power of 8 programme between sessions"'  # cut off: the stage fails after

    def __init__(self) -> None:
        self.release = threading.Event()
        self.held = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, event: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self._send({"choices": [], "prompt_progress": {"total": 900, "processed": 900}})
                for n in range(0, len(owner.FIRST), 9):
                    piece = owner.FIRST[n : n + 9]
                    self._send({"choices": [{"index": 0, "delta": {"content": piece}}]})
                owner.held.set()
                owner.release.wait(120)  # longer than the page is polled for
                self._send({"choices": [{"index": 0, "delta": {"content": owner.REST}}]})
                self._send({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
                self.wfile.write(b"data: [DONE]\n\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def held_stream() -> Iterator[HeldStream]:
    server = HeldStream()
    yield server
    server.release.set()
    server.httpd.shutdown()


def test_idea_analysis_streams_its_text_to_the_run_page_on_the_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_stream: HeldStream
) -> None:
    """The whole path, with a stand-in llama-server: the local model's streamed structured
    answer, the stage runner's text sink, the service's live call and the Run page's line."""
    from test_ui_support import app, poll, service, shows, use_replay

    from frontend_streamlit.components.context import backend as app_backend
    from haytham.models import llama_server
    from haytham.models.llama_server import LocalServer

    use_replay(tmp_path, monkeypatch)
    monkeypatch.setenv("HAYTHAM_PROVIDER", "local")
    monkeypatch.setenv("HAYTHAM_INPUT_VALIDATION", "off")
    # the local extra counts as installed even where it is not (CI's `make test` leaves it out)
    monkeypatch.setattr(llama_server, "package_dir", lambda name: tmp_path)
    monkeypatch.setattr(LocalServer, "url", lambda self: held_stream.url)
    with service() as svc:
        sid = svc.create_session(POWER8_IDEA, session_id="streams", skip_intake=True)
    b = app_backend()
    b.worker.run(sid)
    try:
        assert held_stream.held.wait(30), "idea analysis made no model call"
        live = _wait_for(
            lambda: (
                (c := b.service.live_call(sid)) is not None and c.text.endswith("through ") and c
            )
        )
        assert live.row == "idea-analysis"
        assert live.text == HeldStream.FIRST  # all of it so far, while the call still streams
        # the words, not the JSON markup: field names as words, no braces or quotes
        shown = "Idea analysis is writing: …tldr: A coaching app that walks a psychologist's"
        at = poll(app(sid, "views/run.py"), lambda a: shows(a, "Idea analysis is writing"))
        assert any(shown in str(c.value).replace("\\", "") for c in at.caption), [
            c.value for c in at.caption
        ]
    finally:
        held_stream.release.set()
        b.worker.wait(sid, 30)
    assert b.service.live_call(sid) is None  # the call ended: nothing streams any more
