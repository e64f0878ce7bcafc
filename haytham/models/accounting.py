"""Accounting and bounded retries around any Strands model.

:class:`AccountedModel` wraps every model that :func:`haytham.models.factory.build_model` returns. Each
call (one sequence of attempts) is reported once to a :data:`CallSink` as a :class:`ModelCall`, with
token usage, latency and the number of retries. Transient failures (throttling, timeouts, connection
errors, HTTP 5xx) are retried with exponential backoff. Bad credentials, bad requests and cassette
misses are not. Each attempt's events are buffered, so a retried attempt never leaks partial output
to the agent. (Which errors are transient is decided by
:func:`haytham.models.failures.classify_error`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.exceptions import ContextWindowOverflowException

from haytham.errors import HaythamError, ProviderError
from haytham.models.delegating import DelegatingModel
from haytham.models.failures import classify_error, surfacing, unreachable_reason
from haytham.models.limits import Slots
from haytham.safety.redact import carries_secret, redact, scrubbed

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class ModelCall(BaseModel):
    """One accounted model call: every attempt of one request to a model, summed up."""

    provider: str
    model_id: str
    tier: str
    agent: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float
    retries: int = 0
    ok: bool = True
    error: str | None = None


CallSink = Callable[[ModelCall], None]
"""Receives one :class:`ModelCall` per model call (for cost/usage records). Must be thread-safe."""
ProgressSink = Callable[[int], None]
TextSink = Callable[[str], None]
TAIL_CHARS = 600  # how much of the streamed text a live view keeps
"""Receives the estimated output tokens of the call in progress while it streams (a retried
attempt counts from zero again). Must be cheap and thread-safe."""
PROGRESS_STEP = 16  # report at most every this many estimated tokens


def estimate_tokens(text: str) -> int:
    """Estimate the token count of ``text`` as ``ceil(len(text) / 4)``.

    This is the usual rule of thumb for English text with BPE tokenizers (and what Strands itself
    falls back to). It is deterministic, so it is used wherever a provider reports no usage and for
    context-window checks before a call.
    """
    return math.ceil(len(text) / 4) if text else 0


def messages_text(messages: Messages, system_prompt: str | None = None) -> str:
    """Flatten a system prompt and Strands messages into one plain text, in order.

    Text blocks contribute their text; tool uses their name and JSON input; tool results their text
    or JSON content. Used for token estimates and for replay's ``when`` matching.
    """
    parts: list[str] = [system_prompt] if system_prompt else []
    for message in messages:
        for block in message.get("content", []):
            parts.extend(_block_texts(block))
    return "\n".join(parts)


def _block_texts(block: Mapping[str, Any]) -> list[str]:
    if "text" in block:
        return [str(block["text"])]
    if "toolUse" in block:
        use = block["toolUse"]
        return [str(use.get("name", "")), json.dumps(use.get("input", {}), sort_keys=True)]
    if "toolResult" in block:
        texts: list[str] = []
        for item in block["toolResult"].get("content", []):
            if "text" in item:
                texts.append(str(item["text"]))
            elif "json" in item:
                texts.append(json.dumps(item["json"], sort_keys=True))
        return texts
    return []


def _delta_text(event: Any) -> str:
    """The generated text or tool input a stream event adds (empty for other events)."""
    delta = event.get("contentBlockDelta", {}).get("delta", {}) if isinstance(event, dict) else {}
    if "text" in delta:
        return str(delta["text"])
    if "toolUse" in delta:
        return str(delta["toolUse"].get("input", ""))
    return ""


def events_output_text(events: list[Any]) -> str:
    """Concatenate the generated text and tool-input deltas of a buffered event stream."""
    return "".join(_delta_text(e) for e in events)


class AccountedModel(DelegatingModel):
    """A Strands model that forwards to ``inner`` with bounded retries and per-call accounting.

    It is stateless between calls (safe to share across threads as far as ``inner`` is), forwards
    config and token counting to ``inner``, and reports a :class:`ModelCall` to ``on_call`` after each
    call, successful or not.
    """

    def __init__(
        self,
        inner: Model,
        *,
        provider: str,
        model_id: str,
        tier: str,
        agent: str,
        on_call: CallSink | None = None,
        on_progress: ProgressSink | None = None,
        max_retries: int = 3,
        retry_base_delay: float = 1.0,
        slots: Slots | None = None,
        on_wait: Callable[[], None] | None = None,
        endpoint: str | None = None,
        on_text: TextSink | None = None,
        credential_hint: str | None = None,
    ) -> None:
        super().__init__(inner)
        self.credential_hint = credential_hint  # what to check when credentials are rejected
        self.on_text = on_text  # the tail of the text streamed so far, as it grows
        self.endpoint = endpoint  # the base URL calls go to, named when nothing answers there
        self.slots = slots
        self.on_wait = on_wait  # told once per attempt that waits for a provider slot
        self.on_progress = on_progress
        self.provider = provider
        self.model_id = model_id
        self.tier = tier
        self.agent = agent
        self.on_call = on_call
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Stream the inner model's response once it succeeded (retrying transient failures)."""
        request = messages_text(messages, system_prompt)
        async for event in self._call(
            lambda: self.inner.stream(messages, tool_specs, system_prompt, **kwargs), request
        ):
            yield event

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Legacy structured output, with the same retries and accounting as :meth:`stream`."""
        request = messages_text(prompt, system_prompt)
        async for event in self._call(
            lambda: self.inner.structured_output(output_model, prompt, system_prompt, **kwargs),
            request,
        ):
            yield event

    async def _call(
        self, start: Callable[[], AsyncIterable[Any]], request_text: str
    ) -> AsyncGenerator[Any, None]:
        began = time.perf_counter()
        attempt = 0
        while True:
            events: list[Any] = []
            chars, shown, tail = 0, 0, ""
            try:
                slot = (
                    self.slots.held(self.provider, self.on_wait)
                    if self.slots
                    else contextlib.nullcontext()
                )
                async with slot:  # each attempt holds a provider slot; the back-off does not
                    async for event in start():
                        events.append(event)
                        if self.on_progress is not None or self.on_text is not None:
                            delta = _delta_text(event)
                            chars += len(delta)
                            tail = (tail + delta)[-TAIL_CHARS:]
                            tokens = math.ceil(chars / 4)  # as estimate_tokens counts them
                            if tokens >= shown + PROGRESS_STEP:
                                shown = tokens
                                if self.on_progress is not None:
                                    self.on_progress(shown)
                                if self.on_text is not None:
                                    self.on_text(tail)
                break
            except ContextWindowOverflowException as error:
                # providers raise it from their SDK's error, which may echo the request's
                # headers: the redacted sentence goes on, the chain only when it is clean
                message = redact(str(error))
                self._report(began, attempt, [], request_text, error=message)
                if not carries_secret(error):
                    raise
                raise ContextWindowOverflowException(message) from None
            except HaythamError as error:
                scrubbed(error)
                self._report(began, attempt, [], request_text, error=str(error))
                raise surfacing(error) from error.__cause__
            except Exception as error:
                retryable, reason = classify_error(error)
                unreachable = unreachable_reason(error, self.endpoint)
                if unreachable is not None:  # a retry would meet the same closed door
                    retryable = False
                if retryable and attempt < self.max_retries:
                    attempt += 1
                    delay = self.retry_base_delay * (2 ** (attempt - 1))
                    logger.info(
                        "agent=<%s> attempt=<%d> reason=<%s> | retrying model call in %.1fs",
                        self.agent,
                        attempt,
                        reason,
                        delay,
                    )
                    await asyncio.sleep(delay)
                    continue
                message = (
                    f"The {self.provider} model {self.model_id} could not be reached: "
                    f"{unreachable}."
                    if unreachable is not None
                    else self._failure_message(error, reason, attempt + 1, retryable)
                )
                self._report(began, attempt, [], request_text, error=message)
                failure = ProviderError(message, retryable=retryable, attempts=attempt + 1)
                # tracebacks end up in logs and Burr's tracking: chain the SDK's error only
                # when it does not echo a credential
                raise surfacing(failure) from (None if carries_secret(error) else error)
        self._report(began, attempt, events, request_text)
        for event in events:
            yield event

    def _failure_message(
        self, error: Exception, reason: str, attempts: int, retryable: bool
    ) -> str:
        detail = redact(" ".join(str(error).split()))[:200].rstrip(" .;") or type(error).__name__
        sentence = (
            f"The {self.provider} model {self.model_id} (agent {self.agent}) failed after "
            f"{attempts} attempt{'s' if attempts != 1 else ''}: {reason}: {detail}"
        )
        if reason.startswith("credentials rejected") and self.credential_hint:
            sentence += f"; {self.credential_hint}"
        elif retryable:
            sentence += "; try again later" + (
                " or raise HAYTHAM_MAX_RETRIES" if self.max_retries else ""
            )
        return sentence + "."

    def _report(
        self,
        began: float,
        retries: int,
        events: list[Any],
        request_text: str,
        *,
        error: str | None = None,
    ) -> None:
        if self.on_call is None:
            return
        input_tokens = output_tokens = 0
        if error is None:
            usage = next(
                (
                    e["metadata"]["usage"]
                    for e in reversed(events)
                    if isinstance(e, dict) and "usage" in e.get("metadata", {})
                ),
                None,
            )
            if usage:
                input_tokens = int(usage.get("inputTokens", 0))
                output_tokens = int(usage.get("outputTokens", 0))
            else:  # provider reported nothing: deterministic estimate, never zero for real work
                input_tokens = estimate_tokens(request_text)
                output_tokens = estimate_tokens(events_output_text(events))
        call = ModelCall(
            provider=self.provider,
            model_id=self.model_id,
            tier=self.tier,
            agent=self.agent,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_ms=round((time.perf_counter() - began) * 1000, 3),
            retries=retries,
            ok=error is None,
            error=error,
        )
        try:
            self.on_call(call)
        except Exception:  # a broken sink must not fail the model call it reports
            logger.exception("call sink failed for agent=<%s>", self.agent)
