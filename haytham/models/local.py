"""The bundled local model: Gemma 3 270M (GGUF) served by a private ``llama-server`` process.

The server process lives in :mod:`haytham.models.llama_server`.
:class:`LocalModel` is a Strands :class:`~strands.models.llamacpp.LlamaCppModel` for that server.
  The model is a *base* model and cannot call tools, so when a request offers Strands' structured
  output tool, the request is constrained to that tool's JSON schema (llama.cpp ``json_schema``, made
  safe by :func:`~haytham.models.schema_adapter.safe_schema`) and the JSON that comes back is emitted
  as a ``toolUse`` of that tool. Strands and pydantic then validate it as usual.

Nothing here is module-level state: paths are computed on demand, processes belong to instances.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from strands.models.llamacpp import LlamaCppModel
from strands.tools.structured_output.structured_output_utils import convert_pydantic_to_tool_spec
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException, ModelThrottledException

from haytham.models.accounting import TAIL_CHARS
from haytham.models.schema_adapter import plain_messages, safe_schema, structured_tool
from haytham.safety.redact import redact

T = TypeVar("T", bound=BaseModel)


DEFAULT_PARAMS: Mapping[str, Any] = MappingProxyType(
    {
        "temperature": 0.3,
        "top_p": 0.9,
        "repeat_penalty": 1.15,
        "max_tokens": 2048,  # a whole stage envelope under the capped schema fits
        "cache_prompt": True,
        "seed": 7,
        "stop": ("<|im_end|>", "<|im_start|>", "<end_of_turn>"),
    }
)
"""Sampling defaults for the tiny base model (fixed seed: reproducible demos). The server uses a
ChatML template for this model, whose end markers the base model does not know, hence ``stop``."""


READING = "reading its prompt: "  # what a live view shows before the first token


def reading_text(processed: int, total: int) -> str:
    """What llama.cpp's reading of the prompt looks like on a page."""
    return f"{READING}{processed:,} of {total:,} tokens"


class LocalModel(LlamaCppModel):
    """Strands model for the bundled llama-server, with structured output for a base model.

    ``base_url`` is a callable so the server starts only when the first request is made. Each call
    uses its own HTTP client (Strands runs every agent invocation in a fresh event loop).
    """

    def __init__(
        self,
        base_url: Callable[[], str],
        *,
        model_id: str,
        timeout: float = 120.0,
        params: dict[str, Any] | None = None,
        max_string: int = 160,
        max_items: int = 3,
        context_window: int | None = None,
        output_model: type[BaseModel] | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(
            base_url="http://127.0.0.1",
            timeout=timeout,
            model_id=model_id,
            params={**DEFAULT_PARAMS, "stop": list(DEFAULT_PARAMS["stop"]), **(params or {})},
            context_window_limit=context_window,
        )
        self._resolve_url = base_url
        self._timeout = timeout
        self.max_string = max_string
        self.max_items = max_items
        # Strands' tool-spec flattening can drop nested required fields (1.62: a required nested
        # object loses its place in ``required``); the pydantic model's own schema is exact.
        self.output_model = output_model
        # a structured answer is handed to Strands whole at the end; while it is generated (and
        # while llama.cpp reads the prompt first), this hears what a page can show
        self.on_text = on_text

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[Any] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: Any = None,
        structured_output_model: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Stream text, or (when structured output is requested) one schema-constrained toolUse."""
        target = structured_tool(tool_specs, tool_choice, structured_output_model)
        hint = None
        request = self._format_request([], None, None)  # Strands maps config params into the body
        request.pop("tools", None)
        if target is not None:
            exact = structured_output_model or self.output_model
            source = (
                exact.model_json_schema()
                if exact and exact.__name__ == target["name"]
                else target["inputSchema"]["json"]
            )
            schema = safe_schema(source, max_string=self.max_string, max_items=self.max_items)
            request["json_schema"] = schema
            fields = ", ".join(schema.get("properties", {})) or "the requested fields"
            hint = f"Reply with one JSON object for {target['name']} with: {fields}."
        request["messages"] = plain_messages(messages, system_prompt, hint)
        request["return_progress"] = True  # llama.cpp reports its reading of the prompt
        url = await asyncio.to_thread(self._resolve_url)

        yield {"messageStart": {"role": "assistant"}}
        started = time.perf_counter()
        chunks: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] | None = None
        if target is None:
            yield {"contentBlockStart": {"start": {}}}
        async for kind, value in self._sse(url, request):
            if kind == "text":
                chunks.append(value)
                if self.on_text is not None:
                    self.on_text("".join(chunks)[-TAIL_CHARS:])
                if target is None:
                    yield {"contentBlockDelta": {"delta": {"text": value}}}
            elif kind == "prompt" and self.on_text is not None and not chunks:
                self.on_text(reading_text(*value))
            elif kind == "finish":
                finish = value
            elif kind == "usage":
                usage = value
        stop = "max_tokens" if finish == "length" else "end_turn"
        if target is None:
            yield {"contentBlockStop": {}}
        else:
            text = "".join(chunks).strip()
            try:
                json.loads(text)
                tool_id = f"tooluse_local_{int(started * 1e6)}"
                yield {
                    "contentBlockStart": {
                        "start": {"toolUse": {"name": target["name"], "toolUseId": tool_id}}
                    }
                }
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": text}}}}
                stop = "tool_use"
            except json.JSONDecodeError:  # cut off: hand back the text, Strands retries/fails
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        if usage:
            latency = int((time.perf_counter() - started) * 1000)
            yield {
                "metadata": {
                    "usage": {
                        "inputTokens": usage.get("prompt_tokens", 0),
                        "outputTokens": usage.get("completion_tokens", 0),
                        "totalTokens": usage.get("total_tokens", 0),
                    },
                    "metrics": {"latencyMs": latency},
                }
            }

    async def _sse(
        self, url: str, request: dict[str, Any]
    ) -> AsyncGenerator[tuple[str, Any], None]:
        """POST a streaming chat completion; yields ("text"|"finish"|"usage", value) pairs."""
        async with (
            httpx.AsyncClient(base_url=url, timeout=self._timeout) as client,
            client.stream("POST", "/v1/chat/completions", json=request) as response,
        ):
            if response.status_code >= 400:
                body = (await response.aread()).decode("utf-8", "replace")[:300]
                if response.status_code == 400 and "context" in body.lower():
                    raise ContextWindowOverflowException(f"Context window exceeded: {redact(body)}")
                if response.status_code == 503:
                    raise ModelThrottledException("llama-server is busy or still loading")
                response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line[6:].strip() == "[DONE]":
                    continue
                event = json.loads(line[6:])
                progress = event.get("prompt_progress")
                if isinstance(progress, dict) and progress.get("total"):
                    yield "prompt", (int(progress.get("processed") or 0), int(progress["total"]))
                if event.get("usage"):
                    yield "usage", event["usage"]
                for choice in event.get("choices") or []:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        yield "text", content
                    if choice.get("finish_reason"):
                        yield "finish", choice["finish_reason"]

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Legacy API: one schema-constrained call, validated with pydantic."""
        spec = dict(convert_pydantic_to_tool_spec(output_model))
        raw = ""
        async for event in self.stream(
            prompt, [spec], system_prompt, tool_choice={"tool": {"name": spec["name"]}}
        ):
            delta = event.get("contentBlockDelta", {}).get("delta", {})
            raw += delta.get("toolUse", {}).get("input", "") or delta.get("text", "")
            yield event
        yield {"output": output_model.model_validate_json(raw)}
