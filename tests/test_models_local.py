"""Local provider without the real model: schema safety, request shape, toolUse conversion, errors.

A tiny fake llama-server (OpenAI-style SSE) stands in for the real one; the real one is exercised
by tests/test_local_model.py (slow).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from strands import Agent
from strands.types.exceptions import ContextWindowOverflowException

from haytham.errors import ConfigError, ProviderError
from haytham.models import llama_server, local
from haytham.models.accounting import AccountedModel, ModelCall
from haytham.models.llama_server import LocalServer
from haytham.models.local import LocalModel
from haytham.models.schema_adapter import (
    STRUCTURED_OUTPUT_MARKER,
    plain_messages,
    safe_schema,
    structured_tool,
)


class Point(BaseModel):
    x: int = Field(ge=0, le=10)
    label: str


class Assessment(BaseModel):
    summary: str
    confidence: float = Field(ge=0.0, le=1.0)
    risk: int = Field(ge=1, le=5)
    stage: Literal["idea", "mvp", "growth"]
    tags: list[str] = Field(min_length=1)
    points: list[Point] = Field(default_factory=list, max_length=20)
    extra: dict[str, str] = Field(default_factory=dict)
    maybe: float | None = Field(default=None, gt=0, lt=100)


def test_safe_schema_bounds_everything_and_stays_valid() -> None:
    schema = safe_schema(Assessment.model_json_schema(), max_string=50, max_items=3)
    dumped = json.dumps(schema)
    assert "$ref" not in dumped and "$defs" not in dumped and "title" not in dumped
    props = schema["properties"]
    assert schema["additionalProperties"] is False
    assert props["summary"]["maxLength"] == 50
    assert props["confidence"]["enum"][0] == 0.0 and props["confidence"]["enum"][-1] == 1.0
    assert len(props["confidence"]["enum"]) <= 21
    assert props["risk"] == {"enum": [1, 2, 3, 4, 5]}
    assert props["stage"]["enum"] == ["idea", "mvp", "growth"]
    assert props["tags"]["maxItems"] == 3 and props["tags"]["minItems"] == 1
    assert props["points"]["items"]["properties"]["x"] == {"enum": list(range(11))}
    assert props["extra"]["properties"] == {} and props["extra"]["additionalProperties"] is False
    number_branch = props["maybe"]["anyOf"][0]["enum"]
    assert 0 not in number_branch and 100 not in number_branch and len(number_branch) >= 10
    for value in props["confidence"]["enum"]:  # every allowed value validates
        Assessment(summary="s", confidence=value, risk=1, stage="idea", tags=["t"])
    for value in number_branch:
        Assessment(summary="s", confidence=0, risk=1, stage="idea", tags=["t"], maybe=value)


def test_safe_schema_keeps_tight_limits_and_wide_ranges() -> None:
    schema = safe_schema(
        {
            "type": "object",
            "properties": {
                "short": {"type": "string", "maxLength": 5},
                "long_min": {"type": "string", "minLength": 500},
                "big": {"type": "integer", "minimum": 0, "maximum": 100000},
                "open": {"type": "number"},
                "many": {"type": "array", "items": {"type": "integer"}, "minItems": 8},
            },
        },
        max_string=100,
        max_items=4,
    )
    props = schema["properties"]
    assert props["short"]["maxLength"] == 5
    assert props["long_min"]["maxLength"] == 500  # never below the declared minimum
    assert len(props["big"]["enum"]) <= 30 and props["big"]["enum"][0] == 0
    assert props["open"] == {"type": "number"}
    assert props["many"]["maxItems"] == 8


def test_plain_messages_alternate_and_flatten_tools() -> None:
    messages: Any = [
        {"role": "user", "content": [{"text": "q1"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t", "name": "add", "input": {"a": 1}}}],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t", "status": "success", "content": [{"text": "1"}]}}
            ],
        },
        {"role": "user", "content": [{"text": "q2"}]},
    ]
    out = plain_messages(messages, "system text", hint="Reply with JSON.")
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[-1]["content"] == "1\n\nq2\n\nReply with JSON."
    assert (
        plain_messages([{"role": "assistant", "content": [{"text": "a"}]}], None)[0]["role"]
        == "user"
    )


def test_structured_tool_detection() -> None:
    marked = {
        "name": "Verdict",
        "description": f"{STRUCTURED_OUTPUT_MARKER} ...",
        "inputSchema": {"json": {}},
    }
    plain = {"name": "search", "description": "Search the web", "inputSchema": {"json": {}}}
    assert structured_tool([plain, marked], None) is marked
    assert structured_tool([plain], {"tool": {"name": "search"}}) is plain
    assert structured_tool([plain], None) is None
    assert structured_tool(None, None, Point)["name"] == "Point"  # type: ignore[index]


class FakeServer:
    """Answers /v1/chat/completions like llama-server, recording the requests it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.json_reply = json.dumps(
            {"summary": "ok", "confidence": 0.75, "risk": 2, "stage": "mvp", "tags": ["dogs"]}
        )
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if owner.status != 200:
                    payload = json.dumps(
                        {"error": {"message": "the request exceeds the available context size"}}
                    )
                    self.send_response(owner.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload.encode())
                    return
                text = owner.json_reply if "json_schema" in body else "Hello there."
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
                if body.get("return_progress"):  # llama.cpp reads the prompt in batches first
                    for done_tokens in (512, 1024, 1200):
                        progress = {"total": 1200, "cache": 0, "processed": done_tokens}
                        chunk = {"choices": [], "prompt_progress": progress}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                for piece in pieces:
                    chunk = {
                        "choices": [
                            {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                        ]
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                usage = {
                    "choices": [],
                    "usage": {
                        "prompt_tokens": 30,
                        "completion_tokens": len(pieces),
                        "total_tokens": 30 + len(pieces),
                    },
                }
                for event in (done, usage):
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.httpd.shutdown()


def local_agent(server: FakeServer, calls: list[ModelCall], max_retries: int = 0) -> Agent:
    inner = LocalModel(lambda: server.url, model_id="gemma-test", timeout=10)
    model = AccountedModel(
        inner,
        provider="local",
        model_id="gemma-test",
        tier="heavy",
        agent="critic",
        on_call=calls.append,
        max_retries=max_retries,
        retry_base_delay=0,
    )
    return Agent(
        name="critic",
        model=model,
        callback_handler=None,
        retry_strategy=None,
        system_prompt="You are a critic.",
    )


def test_structured_output_via_constrained_json(fake_server: FakeServer) -> None:
    calls: list[ModelCall] = []
    result = local_agent(fake_server, calls)(
        "Assess: dog walking app", structured_output_model=Assessment
    )
    assert result.structured_output == Assessment(
        summary="ok", confidence=0.75, risk=2, stage="mvp", tags=["dogs"]
    )
    request = fake_server.requests[0]
    assert "tools" not in request and request["stream"] is True
    assert request["json_schema"]["properties"]["risk"] == {"enum": [1, 2, 3, 4, 5]}
    assert request["messages"][0] == {"role": "system", "content": "You are a critic."}
    assert "Assessment" in request["messages"][-1]["content"]
    assert request["temperature"] == local.DEFAULT_PARAMS["temperature"]
    assert len(calls) == 1 and calls[0].input_tokens == 30


def test_free_text_streams_without_schema(fake_server: FakeServer) -> None:
    calls: list[ModelCall] = []
    assert str(local_agent(fake_server, calls)("Say hi")).strip() == "Hello there."
    assert "json_schema" not in fake_server.requests[0]


def test_server_errors_map_to_strands_exceptions(fake_server: FakeServer) -> None:
    calls: list[ModelCall] = []
    fake_server.status = 400
    with pytest.raises(ContextWindowOverflowException):
        local_agent(fake_server, calls)("Say hi")
    fake_server.status = 503
    with pytest.raises(ProviderError) as info:
        local_agent(fake_server, calls, max_retries=1)("Say hi")
    assert info.value.retryable is True and info.value.attempts == 2


def test_server_that_fails_to_start_reports_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = ["sh", "-c", "echo 'loading model'; echo 'error: failed to load model' >&2; exit 1"]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(llama_server, "server_command", lambda *a: failing)
    monkeypatch.setattr(llama_server, "local_model_path", lambda *_: tmp_path / "model.gguf")
    server = LocalServer(context_size=2048, startup_timeout=10)
    with pytest.raises(ConfigError) as info:
        server.url()
    assert "did not start" in str(info.value) and "failed to load model" in str(info.value)
    server.stop()


def test_runtime_starts_one_server_for_all_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from haytham.config import Settings
    from haytham.models import factory

    created: list[Any] = []

    class CountingServer:
        def __init__(self, context_size: int) -> None:
            self.context_size = context_size
            self.stopped = False
            created.append(self)

        def url(self) -> str:
            return "http://127.0.0.1:1"

        def stop(self) -> None:
            self.stopped = True

    monkeypatch.setattr(factory, "LocalServer", CountingServer)
    runtime = factory.ModelRuntime(Settings(context_window=4096))
    threads = [threading.Thread(target=runtime.local_url) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(created) == 1 and created[0].context_size == 4096
    runtime.close()
    assert created[0].stopped
    with pytest.raises(ConfigError, match="closed"):
        runtime.local_url()


def test_the_server_command_runs_the_embedded_llama_cpp_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llama_server, "local_extra_problem", lambda: None)
    command = llama_server.server_command(tmp_path / "m.gguf", 8123, 4096, 2)
    assert command[1:3] == ["-m", "haytham.models.llama_child"]
    assert command[command.index("--port") + 1] == "8123"
    assert command[command.index("--ctx") + 1] == "4096"
    # the child watches this process (not the starting thread, as PR_SET_PDEATHSIG would)
    assert command[command.index("--parent-pid") + 1] == str(os.getpid())


def test_the_server_child_stops_once_its_parent_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    from haytham.models import llama_child

    parents = iter([41, 41, 1])  # re-parented to init on the third look
    monkeypatch.setattr(llama_child.os, "getppid", lambda: next(parents))
    stop = threading.Event()
    llama_child.watch_parent(41, stop, every=0.01)
    assert stop.is_set()


def test_a_structured_answer_shows_the_prompt_read_then_its_text(fake_server: FakeServer) -> None:
    """Issue 28: the local model hands Strands its structured answer whole at the end; while it
    reads the prompt and writes the answer, the page hears both (the Run page shows them)."""
    heard: list[str] = []
    inner = LocalModel(
        lambda: fake_server.url, model_id="gemma-test", timeout=10, on_text=heard.append
    )
    agent = Agent(name="critic", model=inner, callback_handler=None, retry_strategy=None)
    agent("Assess: dog walking app", structured_output_model=Assessment)
    assert fake_server.requests[0]["return_progress"] is True
    reading = [h for h in heard if h.startswith(local.READING)]
    assert reading == [local.reading_text(n, 1200) for n in (512, 1024, 1200)]
    written = heard[len(reading) :]
    assert written and written[-1] == fake_server.json_reply  # the answer, as it grew
    assert all(fake_server.json_reply.startswith(w) for w in written)
