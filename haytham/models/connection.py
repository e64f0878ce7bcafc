"""A connection check: one one-token call to the heavy tier, through the normal model factory.

The UI's provider page runs it before a founder applies a provider choice. The call goes through
:func:`~haytham.models.factory.build_model` like any stage's (the provider check first, the same
clients and credentials, the accounting wrapper), with retries off so a failure answers at once,
and the output capped at one token where the provider takes a cap. Failures come back as one
redacted sentence: the provider's own error, never its key.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from strands.models import Model
from strands.types.content import Messages

from haytham.errors import HaythamError, ProviderError
from haytham.models.factory import ModelRuntime, build_model
from haytham.models.providers.spec import ProviderSettings
from haytham.safety.redact import redact, remember_settings

AGENT = "connection-check"
"""The agent name of the check's call (a replay cassette answers it under this name, turn 1)."""
TIER = "heavy"
PROMPT = "Reply with the single word: ok"
MAX_SECONDS = 30.0  # a connection check that hangs longer than this has answered enough


@dataclass(frozen=True)
class Connection:
    """A successful check: the model that answered and how long the call took."""

    provider: str
    model_id: str
    latency_s: float


async def _call(model: Model) -> None:
    messages: Messages = [{"role": "user", "content": [{"text": PROMPT}]}]
    async for _event in model.stream(messages, None, None):
        pass


def check_connection(settings: ProviderSettings) -> Connection:
    """One one-token call to ``settings``' heavy model; a :class:`Connection` when it answers.

    Raises:
        HaythamError: the provider cannot be used or the call failed: one redacted sentence
            (a :class:`~haytham.errors.ConfigError`, :class:`~haytham.errors.ProviderError` or
            :class:`~haytham.errors.CassetteMiss`).
    """
    remember_settings(settings)  # a key typed in the UI is redacted from every message
    quick = settings.updated(
        max_retries=0, request_timeout=min(settings.request_timeout, MAX_SECONDS)
    )
    with ModelRuntime(quick) as models:  # a local server it starts is stopped again
        try:
            model = build_model(quick, TIER, AGENT, runtime=models)
            quick.spec.one_token(model, quick)
            began = time.perf_counter()
            asyncio.run(_call(model))
        except HaythamError:
            raise
        except Exception as error:  # anything the factory did not type: one redacted sentence
            detail = redact(" ".join(str(error).split()))[:200] or type(error).__name__
            raise ProviderError(
                f"The {quick.provider} model {quick.model_id(TIER)} could not be reached: "
                f"{type(error).__name__}: {detail}."
            ) from None
    return Connection(quick.provider, quick.model_id(TIER), time.perf_counter() - began)
