"""Markdown for people, rendered from the structured outputs (the envelope is the source)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haytham.safety.sanitize import one_line, terminal_safe
from haytham.stages import StageSpec


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return one_line(str(v))


def _is_flat(value: Any) -> bool:
    """A value a table cell can hold: a scalar, a list of scalars, or a small mapping of scalars
    (an item's ``assumes``: ``auth: invite_only, payments: none``)."""
    if isinstance(value, Mapping):
        return all(not isinstance(x, Mapping | list) for x in value.values())
    return not isinstance(value, list) or all(not isinstance(x, Mapping) for x in value)


def _is_flat_records(items: list[Any]) -> bool:
    return bool(items) and all(
        isinstance(i, Mapping) and all(_is_flat(x) for x in i.values()) for i in items
    )


def table_cell(value: Any) -> str:
    """Text for one Markdown table cell: on one line, without control characters, ``|`` escaped.

    A line break (``\\n``, ``\\r``, ``\\r\\n``, or U+2028/U+2029, which editors show as one) in a
    cell would end the table row and an unescaped ``|`` would start a new column, so model text
    could reshape the table; breaks become spaces and ``|`` becomes ``\\|``.
    """
    return " ".join(_scalar(value).splitlines()).replace("|", "\\|")


def _cell(value: Any) -> str:
    """One table cell's text: a list joined with commas, a mapping as ``key: value, …``."""
    if isinstance(value, list):
        return ", ".join(map(_scalar, value))
    if isinstance(value, Mapping):
        return ", ".join(f"{_scalar(k)}: {_scalar(v)}" for k, v in value.items())
    return _scalar(value)


def _table(items: list[Mapping[str, Any]]) -> list[str]:
    cols = list(dict.fromkeys(k for i in items for k in i))
    out = ["| " + " | ".join(map(table_cell, cols)) + " |", "|" + "---|" * len(cols)]
    for i in items:
        cells = [_cell(i.get(c, "")) for c in cols]
        out.append("| " + " | ".join(table_cell(c) for c in cells) + " |")
    return out


def render_value(value: Any, depth: int = 0) -> list[str]:
    """Markdown lines for a payload value: mappings as bold-keyed bullets (empty values left
    out), lists of flat records near the top as tables, other lists as bullets."""
    pad = "  " * depth
    if isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            if isinstance(v, (Mapping, list)) and v:
                lines.append(f"{pad}- **{one_line(str(k))}**:")
                lines += render_value(v, depth + 1)
            elif v not in (None, "", [], {}):
                lines.append(f"{pad}- **{one_line(str(k))}**: {_scalar(v)}")
        return lines
    if isinstance(value, list):
        if depth <= 1 and _is_flat_records(value):
            return [""] + _table(value) + [""]
        lines = []
        for item in value:
            if isinstance(item, (Mapping, list)):
                lines += render_value(item, depth)
                lines.append("")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return lines
    return [f"{pad}{_scalar(value)}"]


def render_stage(spec: StageSpec, output: Mapping[str, Any]) -> str:
    """A stage's Markdown page from its output JSON: title, TL;DR, the model's content, the
    structured payload, the claims table and any anchor compliance, terminal-safe."""
    lines = [
        f"# {spec.number}. {spec.title} ({spec.phase})",
        "",
        "## TL;DR",
        "",
        output.get("tldr", ""),
        "",
        output.get("content", "").strip(),
        "",
        "## Structured output",
        "",
    ]
    lines += render_value(output.get("payload", {}))
    claims = output.get("claims") or []
    if claims:
        lines += ["", "## Claims", ""] + _table(claims)
    compliance = output.get("anchor_compliance") or {}
    if any(compliance.values()):
        lines += ["", "## Anchor compliance", ""] + render_value(compliance)
    return terminal_safe("\n".join(lines).rstrip() + "\n")
