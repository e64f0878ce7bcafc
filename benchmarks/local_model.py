"""Benchmark the bundled local model: raw llama-server HTTP vs our Strands provider.

Usage: ``.venv/bin/python benchmarks/local_model.py [--runs 3] [--max-tokens 128]``

For the same prompt and sampling parameters (fixed seed, so both produce the same tokens) it
measures generated tokens per wall-clock second, free text and under a JSON schema:

(a) raw: a streaming POST to llama-server's ``/v1/chat/completions`` with httpx;
(b) ours: a Strands ``Agent`` on :func:`haytham.models.factory.build_model` (``structured_output_model``
    for the schema case), counting tokens from the accounted ``ModelCall``.

Wall time includes prompt processing. The median of ``--runs`` runs is reported, with the ratio
ours/raw (target: at least 0.90) and the server start time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from typing import Any

import httpx
from pydantic import BaseModel, Field
from strands import Agent
from strands.types.exceptions import MaxTokensReachedException

from haytham.config import Settings
from haytham.models.accounting import ModelCall
from haytham.models.factory import ModelRuntime, build_model
from haytham.models.local import DEFAULT_PARAMS, plain_messages
from haytham.models.schema_adapter import safe_schema

SYSTEM = "You are a startup analyst. Answer briefly."
PROMPT = "Describe the main risks of an app that matches dog walkers with busy owners."


class RiskReport(BaseModel):
    """Structured output used for the schema case."""

    headline: str
    confidence: float = Field(ge=0.0, le=1.0)
    risks: list[str] = Field(min_length=4, max_length=4)
    mitigations: list[str] = Field(min_length=4, max_length=4)


def raw_call(url: str, body: dict[str, Any]) -> tuple[int, float]:
    """One streaming request; returns (completion tokens, wall seconds)."""
    began = time.perf_counter()
    tokens = 0
    with (
        httpx.Client(timeout=300) as client,
        client.stream("POST", f"{url}/v1/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                event = json.loads(line[6:])
                if event.get("usage"):
                    tokens = int(event["usage"]["completion_tokens"])
    return tokens, time.perf_counter() - began


def params(schema: bool, max_tokens: int) -> dict[str, Any]:
    """Sampling parameters shared by both paths; free text ignores EOS so lengths are equal."""
    if schema:
        return {**DEFAULT_PARAMS, "max_tokens": max_tokens}
    return {**DEFAULT_PARAMS, "max_tokens": max_tokens, "ignore_eos": True, "stop": []}


def ours_call(
    settings: Settings, runtime: ModelRuntime, schema: bool, max_tokens: int
) -> tuple[int, float]:
    """One call through a Strands Agent and our provider; returns (output tokens, wall seconds)."""
    calls: list[ModelCall] = []
    model = build_model(settings, "light", "bench", on_call=calls.append, runtime=runtime)
    model.update_config(params=params(schema, max_tokens))
    agent = Agent(
        name="bench",
        model=model,
        system_prompt=SYSTEM,
        callback_handler=None,
        retry_strategy=None,
    )
    began = time.perf_counter()
    if schema:
        agent(PROMPT, structured_output_model=RiskReport)
    else:
        # expected: free text ignores EOS and runs into max_tokens
        with contextlib.suppress(MaxTokensReachedException):
            agent(PROMPT)
    elapsed = time.perf_counter() - began
    return sum(call.output_tokens for call in calls), elapsed


def raw_body(schema: bool, max_tokens: int) -> dict[str, Any]:
    """The request our provider sends, rebuilt by hand (same messages, params and schema)."""
    hint = None
    body: dict[str, Any] = {
        **params(schema, max_tokens),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if schema:
        tool_schema = RiskReport.model_json_schema()
        body["json_schema"] = safe_schema(tool_schema)
        hint = f"Reply with one JSON object for RiskReport with: {', '.join(tool_schema['properties'])}."
    messages: Any = [{"role": "user", "content": [{"text": PROMPT}]}]
    body["messages"] = plain_messages(messages, SYSTEM, hint)
    return body


def measure(runs: int, max_tokens: int) -> None:
    settings = Settings(provider="local", max_retries=0)
    with ModelRuntime(settings) as runtime:
        began = time.perf_counter()
        url = runtime.local_url()
        start_s = time.perf_counter() - began
        print(
            f"llama-server ready in {start_s:.2f} s (context {runtime.server.context_size}, "  # type: ignore[union-attr]
            f"{runtime.server.threads} threads)"
        )  # type: ignore[union-attr]
        rows = []
        for schema in (False, True):
            label = "json schema" if schema else "free text"
            body = raw_body(schema, max_tokens)
            raw_call(url, body)  # warm-up (prompt cache, page cache)
            ours_call(settings, runtime, schema, max_tokens)
            raw_rates, our_rates, raw_tokens, our_tokens = [], [], [], []
            for _ in range(runs):
                tokens, seconds = raw_call(url, body)
                raw_rates.append(tokens / seconds)
                raw_tokens.append(tokens)
                tokens, seconds = ours_call(settings, runtime, schema, max_tokens)
                our_rates.append(tokens / seconds)
                our_tokens.append(tokens)
            raw_tps, our_tps = statistics.median(raw_rates), statistics.median(our_rates)
            rows.append(
                (
                    label,
                    raw_tps,
                    our_tps,
                    statistics.median(raw_tokens),
                    statistics.median(our_tokens),
                )
            )
    print(
        f"{'case':<12} {'raw tok/s':>10} {'ours tok/s':>11} {'ratio':>7} {'raw tok':>8} {'our tok':>8}"
    )
    for label, raw_tps, our_tps, raw_n, our_n in rows:
        print(
            f"{label:<12} {raw_tps:>10.1f} {our_tps:>11.1f} {our_tps / raw_tps:>7.2f} "
            f"{raw_n:>8.0f} {our_n:>8.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    measure(args.runs, args.max_tokens)


if __name__ == "__main__":
    main()
