"""Recording any provider's turns into a replay cassette (``HAYTHAM_RECORD_TO``).

:class:`RecordingModel` wraps a real provider and appends each successful turn — agent, turn,
request hash and the response items — as one JSONL line that
:class:`~haytham.models.replay.ReplayModel` can replay offline.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages

from haytham.models.delegating import DelegatingModel
from haytham.models.replay import last_user_excerpt, request_hash, turn_of

T = TypeVar("T", bound=BaseModel)


def items_from_events(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Cassette response items from a Strands event stream (inverse of :func:`response_events`)."""
    items: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"].get("start", {})
            if "toolUse" in start:
                current = {"tool": start["toolUse"].get("name", ""), "input": ""}
            else:
                current = {"text": ""}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"].get("delta", {})
            if current is None:
                current = {"text": ""}
            if "text" in delta and "text" in current:
                current["text"] += delta["text"]
            elif "toolUse" in delta and "tool" in current:
                current["input"] += delta["toolUse"].get("input", "")
        elif "contentBlockStop" in event and current is not None:
            if "tool" in current:
                raw = current["input"]
                current["input"] = json.loads(raw) if raw.strip() else {}
                items.append(current)
            elif current["text"]:
                items.append(current)
            current = None
        elif "messageStop" in event:
            reason = event["messageStop"].get("stopReason")
            if reason == "max_tokens":
                items.append({"stop": "max_tokens"})
        elif "metadata" in event and "usage" in event["metadata"]:
            usage = event["metadata"]["usage"]
            items.append(
                {
                    "usage": {
                        "input": usage.get("inputTokens", 0),
                        "output": usage.get("outputTokens", 0),
                    }
                }
            )
    return items


def append_line(path: Path, record: Mapping[str, Any]) -> None:
    """Append one JSON line to ``path`` under an exclusive file lock (safe across threads/processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False) + "\n"
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            handle.write(line)
            handle.flush()
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class RecordingModel(DelegatingModel):
    """Wraps any Strands model and appends each successful turn to a JSONL cassette at ``path``.

    Lines carry the agent, the turn, the request hash (so replay matches exactly this request) and a
    short ``note`` with the last user message for humans. Failed calls are not recorded.
    """

    def __init__(self, inner: Model, agent: str, path: Path) -> None:
        super().__init__(inner)
        self.agent = agent
        self.path = path

    def _record(
        self, messages: Messages, system_prompt: str | None, items: list[dict[str, Any]]
    ) -> None:
        append_line(
            self.path,
            {
                "agent": self.agent,
                "turn": turn_of(messages),
                "request_hash": request_hash(messages, system_prompt),
                "response": items,
                "note": last_user_excerpt(messages),
            },
        )

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Pass the inner model's events through, then record them as one cassette line."""
        events: list[Any] = []
        async for event in self.inner.stream(messages, tool_specs, system_prompt, **kwargs):
            events.append(event)
            yield event
        self._record(messages, system_prompt, items_from_events(events))

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Legacy API: pass through and record the validated output as a tool item."""
        async for event in self.inner.structured_output(
            output_model, prompt, system_prompt, **kwargs
        ):
            if "output" in event and isinstance(event["output"], BaseModel):
                item = {
                    "tool": output_model.__name__,
                    "input": event["output"].model_dump(mode="json"),
                }
                self._record(prompt, system_prompt, [item])
            yield event
