"""Adapt Strands requests for a tiny local *base* model: safe JSON schemas and plain chat turns.

llama.cpp turns a JSON schema into a grammar, but a grammar only limits *shape*. A 270M-parameter
base model happily writes a 16-digit ``confidence`` or a string that never closes. So before a
schema is sent, :func:`safe_schema`:

- inlines ``$ref``/``$defs`` (recursion is cut at a fixed depth),
- turns bounded numbers into a short ``enum`` of evenly spaced values (integers with at most
  :data:`MAX_INT_CHOICES` values become the full list),
- caps free strings at ``max_string`` characters and arrays at ``max_items`` items,
- closes objects (``additionalProperties: false``); free-form dicts become empty objects,
- drops annotations the grammar does not need (titles, descriptions, defaults, examples).

The result only ever narrows the original schema, so whatever the model produces still has to (and
is) validated by pydantic afterwards.

:func:`structured_tool` finds the structured-output tool a request asks for, and
:func:`plain_messages` turns Strands messages into alternating user/assistant text a base model's
chat template accepts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from strands.tools.structured_output.structured_output_utils import convert_pydantic_to_tool_spec
from strands.types.content import Messages

from haytham.models.accounting import messages_text

STRUCTURED_OUTPUT_MARKER = "IMPORTANT: This StructuredOutputTool"
"""Prefix Strands puts in the description of the tool it registers for ``structured_output_model``."""

MAX_INT_CHOICES = 101
"""Bounded integer ranges up to this many values become an explicit enum."""

NUMBER_CHOICES = 20
"""Target number of steps for a bounded float range turned into an enum."""

_NICE_STEPS = (1, 2, 2.5, 5)
_STRING_FORMATS = {"date", "time", "date-time", "uuid"}  # formats llama.cpp's converter knows
_DROP = {"title", "description", "default", "examples", "$schema", "$defs", "definitions"}


def safe_schema(
    schema: Mapping[str, Any], *, max_string: int = 240, max_items: int = 5, max_depth: int = 12
) -> dict[str, Any]:
    """Return a terminating, tiny-model-friendly copy of ``schema`` (see the module docstring)."""
    defs = dict(schema.get("$defs", {}) or {})
    defs.update(schema.get("definitions", {}) or {})
    return _walk(dict(schema), defs, max_string, max_items, max_depth)


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return dict(node)
    name = ref.rsplit("/", 1)[-1]
    target = dict(defs.get(name, {}))
    extra = {k: v for k, v in node.items() if k != "$ref"}
    return {**target, **extra}


def _walk(
    node: Mapping[str, Any], defs: Mapping[str, Any], max_string: int, max_items: int, depth: int
) -> dict[str, Any]:
    if depth <= 0:
        return {"type": "null"}
    node = _resolve(node, defs)
    if "allOf" in node and len(node["allOf"]) == 1:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        node = {**_resolve(node["allOf"][0], defs), **merged}

    def recurse(child: Mapping[str, Any]) -> dict[str, Any]:
        return _walk(child, defs, max_string, max_items, depth - 1)

    out = {k: v for k, v in node.items() if k not in _DROP}
    if "enum" in node or "const" in node:
        return out
    for key in ("anyOf", "oneOf"):
        if key in node:
            out[key] = [recurse(option) for option in node[key]]
    if "allOf" in node:
        out["allOf"] = [recurse(option) for option in node["allOf"]]

    kind = node.get("type")
    if kind == "object" or "properties" in node:
        properties = node.get("properties", {})
        out["properties"] = {name: recurse(child) for name, child in properties.items()}
        out["additionalProperties"] = False
        out.pop("patternProperties", None)
    elif kind == "array":
        if isinstance(node.get("items"), Mapping):
            out["items"] = recurse(node["items"])
        if "prefixItems" in node:
            out["prefixItems"] = [recurse(item) for item in node["prefixItems"]]
        low = int(node.get("minItems", 0))
        out["maxItems"] = max(low, min(int(node.get("maxItems", max_items)), max_items))
        out.pop("uniqueItems", None)
    elif kind == "string":
        if node.get("format") not in _STRING_FORMATS:
            out.pop("format", None)
        if "pattern" in node:
            out["pattern"] = grammar_pattern(node["pattern"])
        elif "format" not in out:
            low = int(node.get("minLength", 0))
            out["maxLength"] = max(low, min(int(node.get("maxLength", max_string)), max_string))
    elif kind in ("number", "integer"):
        choices = _number_choices(node, integer=kind == "integer")
        if choices is not None:
            return {"enum": choices}
    return out


def grammar_pattern(pattern: str) -> str:
    """A regex llama.cpp's grammar compiler follows: it ignores ``\\d`` (the model then writes
    anything), so classes are spelled out, and open repeats are bounded so ids stay short."""
    spelled = pattern.replace("\\d", "[0-9]").replace("\\w", "[A-Za-z0-9_]")
    return re.sub(r"\]\+", "]{1,6}", spelled)


def _bounds(node: Mapping[str, Any]) -> tuple[float | None, float | None, bool, bool]:
    low, high = node.get("minimum"), node.get("maximum")
    low_open = high_open = False
    if isinstance(node.get("exclusiveMinimum"), int | float):
        low, low_open = node["exclusiveMinimum"], True
    if isinstance(node.get("exclusiveMaximum"), int | float):
        high, high_open = node["exclusiveMaximum"], True
    return low, high, low_open, high_open


def _nice_step(span: float) -> float:
    raw = span / NUMBER_CHOICES
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in _NICE_STEPS:
        if factor * magnitude >= raw:
            return factor * magnitude
    return 10 * magnitude


def _number_choices(node: Mapping[str, Any], *, integer: bool) -> list[int | float] | None:
    """Evenly spaced allowed values inside the bounds, or None if the range is open/too wide."""
    low, high, low_open, high_open = _bounds(node)
    if low is None or high is None or high < low:
        return None
    if integer:
        first = math.floor(low) + 1 if low_open else math.ceil(low)
        last = math.ceil(high) - 1 if high_open else math.floor(high)
        if last < first:
            return None
        count = last - first + 1
        if count <= MAX_INT_CHOICES:
            return list(range(first, last + 1))
        step = max(1, round(_nice_step(float(last - first))))
        values: list[int | float] = list(range(first, last + 1, step))
        return values
    span = float(high - low)
    if span == 0:
        return None if (low_open or high_open) else [float(low)]
    fine = _nice_step(span)
    decimals = max(0, -math.floor(math.log10(fine)) + 2)
    start = math.ceil(low / fine) * fine
    out: list[int | float] = []
    for index in range(int((high - start) / fine + 1e-9) + 1):
        value = round(start + index * fine, decimals)
        if (
            (not low_open or value > low)
            and (not high_open or value < high)
            and low <= value <= high
        ):
            out.append(value)
    return out or None


def structured_tool(
    tool_specs: list[Any] | None, tool_choice: Any, output_model: type[BaseModel] | None = None
) -> dict[str, Any] | None:
    """The structured-output tool spec a request asks for, if any.

    A forced ``tool_choice`` names it; otherwise the spec whose description carries Strands'
    structured-output marker; otherwise the spec built from ``output_model``.
    """
    specs = list(tool_specs or [])
    if isinstance(tool_choice, dict) and "tool" in tool_choice:
        name = tool_choice["tool"].get("name")
        forced = next((s for s in specs if s.get("name") == name), None)
        if forced is not None:
            return forced
    marked = next(
        (s for s in specs if str(s.get("description", "")).startswith(STRUCTURED_OUTPUT_MARKER)),
        None,
    )
    if marked is not None:
        return marked
    return dict(convert_pydantic_to_tool_spec(output_model)) if output_model else None


def plain_messages(
    messages: Messages, system_prompt: str | None, hint: str | None = None
) -> list[dict[str, str]]:
    """Chat messages as alternating user/assistant strings, which any chat template accepts.

    Tool calls and results become text (the base model cannot use tools); the system prompt is
    kept as a system message and ``hint`` is appended to the last user turn.
    """
    turns: list[dict[str, str]] = []
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        text = messages_text([message]).strip()
        if not text:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "Begin."})
    if hint:
        if turns[-1]["role"] != "user":
            turns.append({"role": "user", "content": hint})
        else:
            turns[-1]["content"] += "\n\n" + hint
    return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + turns
