"""Usage accounting, budgets (``--budget tokens=N,ms=M``) and a rough cost estimate.

A :class:`Meter` belongs to one suite run (no module state) and is thread-safe. Work units check
:meth:`Meter.exhausted` before they start; once a budget is spent the suite stops cleanly and
writes a partial report. Pipeline tokens are added per phase from the session's own accounting,
judge tokens per model call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from haytham.errors import InputError
from haytham.models.accounting import ModelCall
from haytham.models.providers import PROVIDER_TABLE, ProviderTable

# USD per million tokens (input, output), list prices as of early 2026; an estimate only.
PRICES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "claude-haiku-4-5": (1.0, 5.0),
        "claude-sonnet-4-6": (3.0, 15.0),
        "claude-opus-4-6": (5.0, 25.0),
        "gpt-5-mini": (0.25, 2.0),
        "gpt-5.1": (1.25, 10.0),
    }
)


def price_of(
    provider: str, model_id: str, providers: ProviderTable = PROVIDER_TABLE
) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, (0, 0) for a free provider (its spec says so),
    None if unknown."""
    spec = providers.get(provider)
    if spec is not None and spec.free:
        return (0.0, 0.0)
    for name, price in PRICES.items():
        if name in model_id:
            return price
    return None


def cost_usd(provider: str, model_id: str, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated USD of one usage (:func:`price_of`), or None for an unknown price."""
    price = price_of(provider, model_id)
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, 4)


@dataclass(frozen=True)
class Budget:
    """Limits on one suite run: total tokens and wall time in milliseconds (None: no limit)."""

    tokens: int | None = None
    ms: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        """``tokens=N,ms=M`` (either part optional; ``s=`` seconds also accepted)."""
        if not text or not text.strip():
            return cls()
        values: dict[str, int] = {}
        for part in text.split(","):
            key, sep, raw = part.strip().partition("=")
            key = key.strip().lower()
            if not sep or key not in ("tokens", "ms", "s") or not raw.strip().isdigit():
                raise InputError(
                    f"Bad --budget part {part.strip()!r}; use tokens=N,ms=M "
                    "(whole numbers), e.g. --budget tokens=200000,ms=600000."
                )
            number = int(raw.strip())
            if key == "s":
                key, number = "ms", number * 1000
            values[key] = number
        return cls(tokens=values.get("tokens"), ms=values.get("ms"))

    def describe(self) -> str:
        """The budget as the --budget option spells it, or ``none``."""
        parts = ([f"tokens={self.tokens}"] if self.tokens is not None else []) + (
            [f"ms={self.ms}"] if self.ms is not None else []
        )
        return ",".join(parts) or "none"


class Meter:
    """Tokens, calls and elapsed time of one suite run, checked against its :class:`Budget`."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self._lock = threading.Lock()
        self._started = time.perf_counter()
        self.input_tokens = 0
        self.output_tokens = 0
        self.calls = 0
        self.failed_calls = 0
        self.cached = 0

    def elapsed_ms(self) -> float:
        """Milliseconds since the suite run started."""
        return (time.perf_counter() - self._started) * 1000

    def add(self, input_tokens: int, output_tokens: int, calls: int = 1, failed: int = 0) -> None:
        """Count one or more finished model calls (thread-safe)."""
        with self._lock:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.calls += calls
            self.failed_calls += failed

    def on_call(self, call: ModelCall) -> None:
        """A :data:`~haytham.models.accounting.CallSink` for judge models."""
        self.add(call.input_tokens, call.output_tokens, 1, 0 if call.ok else 1)

    def cache_hit(self) -> None:
        """Count one judgement answered from the cache (no model call)."""
        with self._lock:
            self.cached += 1

    @property
    def tokens(self) -> int:
        """Input plus output tokens spent so far."""
        return self.input_tokens + self.output_tokens

    def exhausted(self, extra_tokens: int = 0) -> str | None:
        """Why the budget is spent (one sentence), or None while work may continue."""
        b = self.budget
        if b.tokens is not None and self.tokens + extra_tokens >= b.tokens:
            return f"token budget spent ({self.tokens + extra_tokens} of {b.tokens} tokens)"
        if b.ms is not None and self.elapsed_ms() >= b.ms:
            return f"time budget spent ({self.elapsed_ms():.0f} of {b.ms} ms)"
        return None

    def snapshot(self) -> dict[str, float | int]:
        """The counters as the suite report stores them."""
        return {
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "cached": self.cached,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "wall_ms": round(self.elapsed_ms(), 1),
        }


__all__ = ["Budget", "Meter", "PRICES", "cost_usd", "price_of"]
