"""A fault injector for reliability tests: a Strands ``Model`` around the real provider.

:class:`FaultPlan` says which agent fails, how and for how many calls; :meth:`FaultPlan.install`
monkeypatches ``haytham.models.factory._provider_model`` so every model the app builds (stages,
anchor, verifiers) is wrapped by a :class:`FaultyModel` *below* the accounting/retry layer — the
retries, the events and the typed errors the tests observe are the real ones.

Kinds raised as exceptions (what provider SDKs raise): ``timeout``, ``throttle`` (Strands'
``ModelThrottledException``, HTTP 429), ``server_error`` (HTTP 503), ``connection_reset``, ``connection_refused`` (not retried),
``client_error`` (HTTP 400, not retryable). Kinds returned as a bad reply: ``malformed_json``
(a tool call whose arguments are not JSON), ``schema_invalid`` (valid JSON, wrong shape),
``text_json`` (broken JSON as plain text, no tool call), ``empty`` (no content at all),
``max_tokens`` (output cut off by the token limit). ``hang`` never answers (for timeouts).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections import Counter
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from strands.models import Model
from strands.types.content import Messages
from strands.types.exceptions import ModelThrottledException

import haytham.models.factory as factory
from haytham.stages import STAGES
from haytham.state import SessionState
from haytham.storage.folder import sqlite_persister as persister
from haytham.storage.protocol import PARTITION

EXCEPTION_KINDS = (
    "timeout",
    "throttle",
    "server_error",
    "connection_reset",
    "connection_refused",
    "client_error",
)
REPLY_KINDS = ("malformed_json", "schema_invalid", "text_json", "empty", "max_tokens")
FOREVER = 10**9


class FakeHTTPError(Exception):
    """What httpx/anthropic/openai errors look like to the classifier: a ``status_code``."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True)
class Fault:
    """``agent`` fails with ``kind`` on its next ``times`` model calls (then the fault clears)."""

    kind: str
    agent: str
    times: int = FOREVER
    detail: str = ""  # extra text carried by the error (e.g. a URL with a secret in it)

    def error(self) -> Exception:
        detail = f" {self.detail}" if self.detail else ""
        if self.kind == "timeout":
            return TimeoutError(f"The read operation timed out{detail}")
        if self.kind == "throttle":
            return ModelThrottledException(f"429 Too Many Requests: rate limit exceeded{detail}")
        if self.kind == "server_error":
            return FakeHTTPError(503, f"503 Service Unavailable{detail}")
        if self.kind == "connection_reset":  # the server dropped the call: worth retrying
            return ConnectionResetError(104, f"Connection reset by peer{detail}")
        if self.kind == "connection_refused":  # nothing listens: a retry would not help
            return ConnectionRefusedError(111, f"Connection refused{detail}")
        if self.kind == "client_error":
            return FakeHTTPError(400, f"400 Bad Request: invalid parameter{detail}")
        raise ValueError(f"{self.kind} is not an exception fault")


class FaultPlan:
    """Thread-safe schedule of faults, and a count of what was injected per agent."""

    def __init__(self, *faults: Fault) -> None:
        self.faults = list(faults)
        self.injected: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._used: Counter[int] = Counter()
        self._lock = threading.Lock()

    def take(self, agent: str) -> Fault | None:
        with self._lock:
            self.calls[agent] += 1
            for n, fault in enumerate(self.faults):
                if fault.agent == agent and self._used[n] < fault.times:
                    self._used[n] += 1
                    self.injected[agent] += 1
                    return fault
        return None

    def clear(self) -> None:
        """The fault goes away (the provider recovered)."""
        with self._lock:
            self.faults.clear()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FaultPlan:
        real = factory._provider_model

        def wrapped(settings: Any, tier: str, agent: str, *args: Any, **kwargs: Any) -> Model:
            return FaultyModel(real(settings, tier, agent, *args, **kwargs), agent, self)

        monkeypatch.setattr(factory, "_provider_model", wrapped)
        return self


def _bad_reply(kind: str, tool: str | None) -> list[dict[str, Any]]:
    """Strands stream events for one bad model reply."""
    start: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    usage = {
        "metadata": {
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
            "metrics": {"latencyMs": 0},
        }
    }

    def tool_call(raw: str) -> list[dict[str, Any]]:
        return [
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"name": tool or "Output", "toolUseId": "fault-tool-1"}}
                }
            },
            {"contentBlockDelta": {"delta": {"toolUse": {"input": raw}}}},
            {"contentBlockStop": {}},
        ]

    def text(body: str) -> list[dict[str, Any]]:
        return [
            {"contentBlockStart": {"start": {}}},
            {"contentBlockDelta": {"delta": {"text": body}}},
            {"contentBlockStop": {}},
        ]

    if kind == "malformed_json":
        body, stop = tool_call('{"tldr": "cut here", "claims": [{"text": '), "tool_use"
    elif kind == "schema_invalid":
        body, stop = tool_call('{"summary": "a valid JSON object of the wrong shape"}'), "tool_use"
    elif kind == "text_json":
        body, stop = text('{"tldr": "broken JSON as text", "payload": {'), "end_turn"
    elif kind == "empty":
        body, stop = [], "end_turn"
    elif kind == "max_tokens":
        body, stop = text('{"tldr": "The answer was cut off by the output tok'), "max_tokens"
    else:
        raise ValueError(f"unknown fault kind {kind!r}")
    return [*start, *body, {"messageStop": {"stopReason": stop}}, usage]


class FaultyModel(Model):
    """Delegates to ``inner`` unless the plan says this call fails."""

    def __init__(self, inner: Model, agent: str, plan: FaultPlan) -> None:
        self.inner, self.agent, self.plan = inner, agent, plan
        self._faulted = False  # a bad reply was injected into this conversation

    @property
    def config(self) -> Any:
        return self.inner.get_config()

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,  # type: ignore[override]
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        fault = self.plan.take(self.agent)
        if fault is not None and fault.kind == "hang":
            await asyncio.sleep(3600)
        if fault is not None and fault.kind in EXCEPTION_KINDS:
            raise fault.error()
        if fault is not None:
            self._faulted = True
            tool = next((s["name"] for s in tool_specs or [] if "name" in s), None)
            for event in _bad_reply(fault.kind, tool):
                yield event
            return
        if self._faulted:  # the recorded answer belongs to the first turn: replay that one
            first = next(
                (n for n, m in enumerate(messages) if m.get("role") == "assistant"), len(messages)
            )
            messages = messages[:first]
        async for event in self.inner.stream(messages, tool_specs, system_prompt, **kwargs):
            yield event

    async def structured_output(
        self,
        output_model: Any,
        prompt: Messages,  # type: ignore[override]
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        async for event in self.inner.structured_output(
            output_model, prompt, system_prompt, **kwargs
        ):
            yield event


# -- observing a session ----------------------------------------------------------------------
def read_events(root: Path, kind: str | None = None, stage: str | None = None) -> list[dict]:
    rows = [
        json.loads(x) for x in (root / "events.jsonl").read_text("utf-8").splitlines() if x.strip()
    ]
    return [
        e
        for e in rows
        if (kind is None or e["type"] == kind) and (stage is None or e.get("stage") == stage)
    ]


def started(root: Path) -> Counter[str]:
    """How many times each stage (or the anchor extraction) was started."""
    return Counter(e["stage"] for e in read_events(root, "stage_started"))


def load_state(root: Path) -> dict[str, Any]:
    """The latest Burr state of the session at ``root``, read straight from ``state.db``, as
    JSON (what the session files mirror)."""
    loaded = persister(str(root / "state.db")).load(PARTITION, root.name)
    assert loaded is not None, f"no persisted state in {root}"
    return SessionState.of(loaded["state"]).dump()


def assert_consistent(root: Path) -> dict[str, Any]:
    """Burr state and session files agree; no temp file or unreadable JSON is left.

    Returns the state. Checks every ``*.json`` parses, ``events.jsonl`` lines parse, the anchor,
    the gates and each stage's output folder mirror the state, and nothing else is there.
    """
    leftovers = [p for p in root.rglob("*.tmp")]
    assert not leftovers, f"temp files left behind: {leftovers}"
    for path in root.rglob("*.json"):
        json.loads(path.read_text("utf-8"))  # raises on partial JSON
    read_events(root)
    state = load_state(root)
    anchor = root / "concept_anchor.json"
    if state.get("anchor"):
        assert json.loads(anchor.read_text("utf-8")) == state["anchor"]
    else:
        assert not anchor.exists()
    assert json.loads((root / "gates.json").read_text("utf-8")) == (state.get("gates") or {})
    outputs = state.get("outputs") or {}
    for spec in STAGES:
        path = root / "stages" / spec.dir_name / "output.json"
        if spec.slug in outputs:
            record = json.loads(path.read_text("utf-8"))
            assert {k: record[k] for k in outputs[spec.slug]} == outputs[spec.slug], spec.slug
        else:
            assert not path.parent.exists(), f"{spec.slug} has files but is not in the state"
    summary = json.loads((root / "summary.json").read_text("utf-8"))
    assert summary["status"] == state["status"]
    return state


LOST_DB = ("deleted", "emptied", "rows-deleted")


def lose_state_db(folder: Path, how: str) -> None:
    """Damage a session's ``state.db`` as a user or a tool might: ``how`` is one of LOST_DB."""
    db = folder / "state.db"
    if how == "deleted":
        db.unlink()
    elif how == "emptied":
        db.write_bytes(b"")
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM burr_state")
