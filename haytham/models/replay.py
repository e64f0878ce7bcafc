"""Replay and recording of model turns (JSONL cassettes), for offline tests and reproducible demos.

A cassette line describes one model call::

    {"agent": "writer", "turn": 1, "when": ["idea:"], "request_hash": "…",
     "response": [{"text": "…"}, {"tool": "Verdict", "input": {...}},
                  {"stop": "max_tokens"}, {"usage": {"input": 10, "output": 5}}],
     "note": "free text, ignored"}

``turn`` is the 1-based index of the call within that agent's conversation: the number of assistant
messages in the request plus one. Matching is a pure function of the request (agent name, messages,
system prompt), so a session resumed in another process gets the same turns. Among the lines whose
agent and turn match, whose ``when`` substrings all occur in the request text and whose
``request_hash`` (if any) equals the request's, the one with the most ``when`` conditions wins; ties
go to the first line in file order. Blank lines and lines starting with ``//`` are skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from strands.models import Model
from strands.types.content import Messages

from haytham.errors import CassetteMiss, ConfigError
from haytham.models.accounting import estimate_tokens, messages_text
from haytham.storage.folder import read_capped

T = TypeVar("T", bound=BaseModel)

_STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence")


class CassetteEntry(BaseModel):
    """One recorded model turn (one JSONL line of a cassette)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    turn: int = Field(ge=1)
    when: tuple[str, ...] = ()
    request_hash: str | None = None
    response: tuple[dict[str, Any], ...]
    note: str | None = None
    source: str = ""

    @field_validator("response")
    @classmethod
    def _valid_items(cls, items: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        for item in items:
            keys = set(item)
            if keys == {"text"} and isinstance(item["text"], str):
                continue
            if "tool" in keys and keys <= {"tool", "input"} and isinstance(item["tool"], str):
                if not isinstance(item.get("input", {}), dict):
                    raise ValueError(f"tool input must be an object: {item!r}")
                continue
            if keys == {"stop"} and item["stop"] in _STOP_REASONS:
                continue
            if keys == {"usage"} and isinstance(item["usage"], dict):
                continue
            raise ValueError(
                f"bad response item {item!r}; use {{'text': …}}, {{'tool': name, 'input': {{…}}}}, "
                "{'stop': 'max_tokens'} or {'usage': {'input': n, 'output': m}}"
            )
        return items


class Cassette:
    """Recorded turns loaded from one JSONL file or every ``*.jsonl`` in a folder (sorted by name).

    Immutable once loaded, so one instance may be shared by every agent and thread of a runtime.
    """

    def __init__(self, entries: Sequence[CassetteEntry], location: str) -> None:
        self.entries: tuple[CassetteEntry, ...] = tuple(entries)
        self.location = location

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """Read a cassette file or folder; raises :class:`ConfigError` naming any bad line."""
        if path.is_dir():
            files = sorted(path.glob("*.jsonl"))
            if not files:
                raise ConfigError(f"The cassette folder {path} holds no *.jsonl files.")
        elif path.is_file():
            files = [path]
        elif path.exists():
            raise ConfigError(f"The cassette {path} is not a file or folder of *.jsonl files.")
        else:
            raise ConfigError(
                f"The cassette {path} does not exist; set HAYTHAM_CASSETTE to a file."
            )
        entries: list[CassetteEntry] = []
        for file in files:
            for number, line in enumerate(_read_text(file).splitlines(), 1):
                if not line.strip() or line.lstrip().startswith("//"):
                    continue
                try:
                    data = json.loads(line)
                    entries.append(CassetteEntry(**data, source=f"{file}:{number}"))
                except ValidationError as error:
                    first = error.errors()[0]
                    where = ".".join(str(part) for part in first["loc"]) or "line"
                    raise ConfigError(
                        f"Cassette line {file}:{number} is invalid: {where}: {first['msg']}."
                    ) from None
                except (json.JSONDecodeError, TypeError) as error:
                    raise ConfigError(
                        f"Cassette line {file}:{number} is invalid: {error}."
                    ) from None
        return cls(entries, str(path))

    def match(self, agent: str, turn: int, text: str, digest: str) -> CassetteEntry | None:
        """The best entry for this request, or ``None`` (see the module docstring for the rules)."""
        best: CassetteEntry | None = None
        for entry in self.entries:
            if entry.agent != agent or entry.turn != turn:
                continue
            if entry.request_hash is not None and entry.request_hash != digest:
                continue
            if not all(condition in text for condition in entry.when):
                continue
            if best is None or len(entry.when) > len(best.when):
                best = entry
        return best

    def recorded_input(self, agent: str) -> dict[str, Any] | None:
        """The structured answer (a tool input) of ``agent``'s first unconditioned turn: what
        the cassette answers for *any* request of that agent, which is what a recording made
        without ``when`` conditions holds. ``None`` when there is none."""
        for entry in self.entries:
            if entry.agent == agent and entry.turn == 1 and not entry.when:
                if entry.request_hash is not None:
                    continue
                for item in entry.response:
                    if "tool" in item and isinstance(item.get("input"), dict):
                        return item["input"]
        return None


def normalized_request(messages: Messages, system_prompt: str | None) -> dict[str, Any]:
    """The parts of a request that define it, without volatile ids (tool-use ids differ per run)."""
    norm_messages = []
    for message in messages:
        blocks: list[dict[str, Any]] = []
        for block in message.get("content", []):
            if "text" in block:
                blocks.append({"text": block["text"]})
            elif "toolUse" in block:
                use = block["toolUse"]
                blocks.append({"toolUse": {"name": use.get("name"), "input": use.get("input")}})
            elif "toolResult" in block:
                result = block["toolResult"]
                content = [
                    {k: v for k, v in item.items() if k in ("text", "json")}
                    for item in result.get("content", [])
                ]
                blocks.append({"toolResult": {"status": result.get("status"), "content": content}})
            else:
                blocks.append({"type": sorted(block)[0] if block else "empty"})
        norm_messages.append({"role": message.get("role"), "content": blocks})
    return {"system": system_prompt or "", "messages": norm_messages}


def request_hash(messages: Messages, system_prompt: str | None) -> str:
    """sha256 (hex) of the normalized request, as written by :class:`RecordingModel`."""
    payload = json.dumps(
        normalized_request(messages, system_prompt), sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def turn_of(messages: Messages) -> int:
    """1-based index of the model call within the conversation: assistant messages + 1."""
    return 1 + sum(1 for message in messages if message.get("role") == "assistant")


def last_user_excerpt(messages: Messages, limit: int = 80) -> str:
    """A short, single-line excerpt of the last user message (for error messages and notes)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            text = " ".join(messages_text([message]).split())
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""


def response_events(
    items: Sequence[Mapping[str, Any]], turn: int, input_tokens: int
) -> list[dict[str, Any]]:
    """Strands stream events for recorded response items (tool-use ids are deterministic)."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    stop: str | None = None
    usage: Mapping[str, Any] | None = None
    output_chars: list[str] = []
    has_tool = False
    for index, item in enumerate(items):
        if "text" in item:
            output_chars.append(item["text"])
            events += [
                {"contentBlockStart": {"start": {}}},
                {"contentBlockDelta": {"delta": {"text": item["text"]}}},
                {"contentBlockStop": {}},
            ]
        elif "tool" in item:
            has_tool = True
            payload = json.dumps(item.get("input", {}), ensure_ascii=False)
            output_chars.append(payload)
            tool_id = f"tooluse_t{turn}_{index}"
            events += [
                {
                    "contentBlockStart": {
                        "start": {"toolUse": {"name": item["tool"], "toolUseId": tool_id}}
                    }
                },
                {"contentBlockDelta": {"delta": {"toolUse": {"input": payload}}}},
                {"contentBlockStop": {}},
            ]
        elif "stop" in item:
            stop = item["stop"]
        elif "usage" in item:
            usage = item["usage"]
    events.append({"messageStop": {"stopReason": stop or ("tool_use" if has_tool else "end_turn")}})
    in_tokens = int(usage.get("input", input_tokens)) if usage else input_tokens
    out_tokens = (
        int(usage["output"])
        if usage and "output" in usage
        else estimate_tokens("".join(output_chars))
    )
    events.append(
        {
            "metadata": {
                "usage": {
                    "inputTokens": in_tokens,
                    "outputTokens": out_tokens,
                    "totalTokens": in_tokens + out_tokens,
                },
                "metrics": {"latencyMs": 0},
            }
        }
    )
    return events


class ReplayModel(Model):
    """A Strands model that answers from a :class:`Cassette` instead of a provider.

    Build one per agent (the ``agent`` name selects the cassette lines). Usage numbers come from the
    line's ``usage`` item or, failing that, from :func:`estimate_tokens` of request and response.
    """

    def __init__(
        self, cassette: Cassette, agent: str, model_id: str = "replay", latency: float = 0.0
    ) -> None:
        self.cassette = cassette
        self.agent = agent
        self.latency = latency  # seconds each call takes, as a provider would (benchmarks)
        self.config: dict[str, Any] = {"model_id": model_id}

    def update_config(self, **model_config: Any) -> None:
        """Merge ``model_config`` into the replay model's configuration."""
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        """The replay model's configuration (its model id)."""
        return self.config

    def _lookup(self, messages: Messages, system_prompt: str | None) -> tuple[CassetteEntry, str]:
        text = messages_text(messages, system_prompt)
        turn = turn_of(messages)
        entry = self.cassette.match(self.agent, turn, text, request_hash(messages, system_prompt))
        if entry is None:
            raise CassetteMiss(
                f"No recorded turn in cassette {self.cassette.location} for agent '{self.agent}', "
                f'turn {turn} (last user message: "{last_user_excerpt(messages)}"); record it with '
                "--record or add a matching line."
            )
        return entry, text

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        """Yield the recorded response of the matching cassette line as Strands stream events."""
        entry, text = self._lookup(messages, system_prompt)
        if self.latency:
            await asyncio.sleep(self.latency)
        for event in response_events(entry.response, turn_of(messages), estimate_tokens(text)):
            yield event

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Legacy API: validate the line's first tool input (or JSON text) as ``output_model``."""
        entry, _ = self._lookup(prompt, system_prompt)
        data: Any = next((item.get("input", {}) for item in entry.response if "tool" in item), None)
        if data is None:
            text = "".join(item["text"] for item in entry.response if "text" in item)
            data = json.loads(text)
        yield {"output": output_model.model_validate(data)}


MAX_CASSETTE_BYTES = 256 * 1024 * 1024


def _read_text(file: Path) -> str:
    """A cassette file's text, read no further than :data:`MAX_CASSETTE_BYTES`, strictly UTF-8."""
    try:
        raw = read_capped(file, MAX_CASSETTE_BYTES)
    except OSError as exc:
        raise ConfigError(f"Cannot read the cassette {file}: {exc.strerror or exc}.") from None
    if raw is None:
        raise ConfigError(f"The cassette {file} is larger than {MAX_CASSETTE_BYTES >> 20} MB.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"The cassette {file} is not UTF-8 JSON lines.") from None
