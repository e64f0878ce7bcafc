"""Accounting and bounded retries: counts, classification, buffering, typed errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pipeline_helpers import replay_settings
from strands import Agent, tool
from strands.models import Model
from strands.types.exceptions import ContextWindowOverflowException, ModelThrottledException

from haytham.config import Settings
from haytham.errors import CassetteMiss, ProviderError
from haytham.models.accounting import (
    AccountedModel,
    ModelCall,
    classify_error,
    estimate_tokens,
    messages_text,
)
from haytham.models.factory import build_model, context_window
from haytham.models.providers import anthropic
from haytham.models.replay import response_events


class HTTPStatusLike(Exception):
    """Shaped like anthropic/openai APIStatusError: carries ``status_code``."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class AuthenticationError(Exception):
    """Named like the SDKs' 401 error, with no status attribute."""


class ClientErrorLike(Exception):
    """Shaped like botocore's ClientError: ``response`` is a dict."""

    def __init__(self, code: str, status: int) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


class FaultyModel(Model):
    """Fails with the queued exceptions (after emitting some partial text), then answers."""

    def __init__(
        self,
        faults: list[BaseException],
        answer: str = "final answer",
        usage: tuple[int, int] | None = (21, 7),
    ) -> None:
        self.faults = list(faults)
        self.answer = answer
        self.usage = usage
        self.attempts = 0
        self.config: dict[str, Any] = {"model_id": "faulty"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        self.attempts += 1
        if self.faults:
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "PARTIAL "}}}
            raise self.faults.pop(0)
        items: list[dict[str, Any]] = [{"text": self.answer}]
        if self.usage:
            items.append({"usage": {"input": self.usage[0], "output": self.usage[1]}})
        for event in response_events(items, 1, 0):
            if self.usage is None and "metadata" in event:
                continue
            yield event

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield


def accounted(
    inner: Model, calls: list[ModelCall], max_retries: int = 3, delay: float = 0.0
) -> AccountedModel:
    return AccountedModel(
        inner,
        provider="anthropic",
        model_id="claude-x",
        tier="light",
        agent="critic",
        on_call=calls.append,
        max_retries=max_retries,
        retry_base_delay=delay,
        credential_hint=anthropic.SPEC.credential_hint,  # as build_model passes it
    )


def run_agent(model: Model, prompt: str = "rate it") -> str:
    agent = Agent(name="critic", model=model, callback_handler=None, retry_strategy=None)
    return str(agent(prompt)).strip()


def test_throttled_twice_then_success_counts_two_retries() -> None:
    inner = FaultyModel(
        [ModelThrottledException("slow down"), ModelThrottledException("slow down")]
    )
    calls: list[ModelCall] = []
    text = run_agent(accounted(inner, calls))
    assert text == "final answer"  # no partial output from the failed attempts
    assert inner.attempts == 3
    assert len(calls) == 1
    call = calls[0]
    assert (call.retries, call.ok, call.error) == (2, True, None)
    assert (call.input_tokens, call.output_tokens) == (21, 7)
    assert (call.provider, call.model_id, call.tier, call.agent) == (
        "anthropic",
        "claude-x",
        "light",
        "critic",
    )
    assert call.latency_ms >= 0


def test_bad_credentials_are_not_retried() -> None:
    for fault in (
        HTTPStatusLike(401),
        AuthenticationError("invalid x-api-key"),
        HTTPStatusLike(403),
        ClientErrorLike("AccessDeniedException", 403),
    ):
        inner = FaultyModel([fault])
        calls: list[ModelCall] = []
        with pytest.raises(ProviderError) as info:
            run_agent(accounted(inner, calls))
        assert inner.attempts == 1
        assert info.value.retryable is False and info.value.attempts == 1
        assert "credentials rejected" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
        assert len(calls) == 1 and calls[0].ok is False and calls[0].retries == 0
        assert calls[0].error == str(info.value)


def test_retries_are_bounded_and_back_off_exponentially(monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        delays.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    inner = FaultyModel([HTTPStatusLike(503)] * 5)
    calls: list[ModelCall] = []
    with pytest.raises(ProviderError) as info:
        run_agent(accounted(inner, calls, max_retries=2, delay=0.5))
    assert inner.attempts == 3
    assert delays == [0.5, 1.0]
    assert info.value.retryable is True and info.value.attempts == 3
    assert "after 3 attempts" in str(info.value)
    assert calls[0].retries == 2 and calls[0].ok is False


def test_error_after_a_tool_round_is_still_typed(tmp_path: Path) -> None:
    @tool
    def ping() -> str:
        """Return pong."""
        return "pong"

    cassette = tmp_path / "c.jsonl"
    cassette.write_text(
        json.dumps({"agent": "a", "turn": 1, "response": [{"tool": "ping", "input": {}}]}) + "\n"
    )
    settings = replay_settings(tmp_path, cassette, max_retries=3)
    calls: list[ModelCall] = []
    agent = Agent(
        name="a",
        model=build_model(settings, "light", "a", on_call=calls.append),
        tools=[ping],
        callback_handler=None,
        retry_strategy=None,
    )
    with pytest.raises(CassetteMiss) as info:  # not wrapped in Strands' EventLoopException
        agent("go")
    assert "turn 2" in str(info.value)
    assert info.value.to_dict()["error_type"] == "CassetteMiss"
    assert [c.ok for c in calls] == [True, False]
    assert calls[1].retries == 0  # a miss is never retried


def test_context_overflow_passes_through_unretried() -> None:
    inner = FaultyModel([ContextWindowOverflowException("too long")])
    calls: list[ModelCall] = []
    model = accounted(inner, calls)

    async def consume() -> None:
        async for _ in model.stream([{"role": "user", "content": [{"text": "x"}]}]):
            pass

    with pytest.raises(ContextWindowOverflowException):
        asyncio.run(consume())
    assert inner.attempts == 1 and calls[0].ok is False


def test_missing_usage_is_estimated() -> None:
    inner = FaultyModel([], answer="x" * 40, usage=None)
    calls: list[ModelCall] = []
    run_agent(accounted(inner, calls), prompt="y" * 80)
    assert calls[0].input_tokens >= 20 and calls[0].output_tokens == 10


def test_broken_sink_does_not_fail_the_call() -> None:
    def sink(call: ModelCall) -> None:
        raise RuntimeError("disk full")

    model = AccountedModel(
        FaultyModel([]), provider="p", model_id="m", tier="heavy", agent="a", on_call=sink
    )
    assert run_agent(model) == "final answer"


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ModelThrottledException("x"), True),
        (TimeoutError(), True),
        (ConnectionRefusedError(), True),
        (httpx.ConnectError("refused"), True),
        (httpx.ReadTimeout("slow"), True),
        (HTTPStatusLike(500), True),
        (HTTPStatusLike(429), True),
        (HTTPStatusLike(400), False),
        (HTTPStatusLike(401), False),
        (ClientErrorLike("ThrottlingException", 400), True),
        (ClientErrorLike("UnrecognizedClientException", 403), False),
        (ValueError("bad"), False),
    ],
)
def test_classify_error(error: BaseException, retryable: bool) -> None:
    assert classify_error(error)[0] is retryable


def test_classify_follows_the_cause_chain() -> None:
    try:
        try:
            raise HTTPStatusLike(503)
        except HTTPStatusLike as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert classify_error(outer) == (True, "temporary provider error (HTTP 503)")


def test_estimate_tokens_and_context_window() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert context_window(Settings()) == 16384
    assert context_window(Settings(provider="anthropic")) == 200_000
    assert context_window(Settings(provider="ollama", context_window=4096)) == 4096
    text = messages_text(
        [
            {
                "role": "user",
                "content": [
                    {"text": "hi"},
                    {
                        "toolResult": {
                            "toolUseId": "1",
                            "status": "success",
                            "content": [{"json": {"a": 1}}],
                        }
                    },
                ],
            }
        ],
        "sys",
    )
    assert text == 'sys\nhi\n{"a": 1}'


def test_a_failure_sentence_has_one_full_stop_and_no_retry_hint_without_retries() -> None:
    calls: list[ModelCall] = []
    model = accounted(FaultyModel([TimeoutError("the server timed out.")]), calls, max_retries=0)
    with pytest.raises(ProviderError) as caught:
        run_agent(model)
    text = str(caught.value)
    assert text.endswith("timed out; try again later.") and ".;" not in text
    assert "HAYTHAM_MAX_RETRIES" not in text
