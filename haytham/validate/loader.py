"""Read a saved session folder (the public layout the pipeline writes) into a :class:`Snapshot`.

Layout: ``idea.md``, optional ``concept_anchor.json``, ``stages/<NN>-<slug>/output.json`` (each
validated with its stage's ``output_model``; extra keys such as ``stage`` or ``validations`` are
ignored) and optional ``events.jsonl`` (``tool_call`` events become ``Snapshot.tool_calls``).
Missing later stages are fine; a file that exists but cannot be read or parsed raises
:class:`~haytham.errors.SessionCorrupt` naming the file. A truncated *last* line of
``events.jsonl`` without a trailing newline (a crash mid-append) is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from haytham.errors import SessionCorrupt, SessionNotFound
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.stages import STAGES
from haytham.stages.base import StageSpec
from haytham.validate.model import Snapshot


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionCorrupt(str(path), type(exc).__name__ + ": " + str(exc)) from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise SessionCorrupt(str(path), f"invalid JSON ({exc.msg} at line {exc.lineno})") from None


def _why(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"does not match its schema: {loc}: {first.get('msg', '')}{more}"


def _stage_file(stages_dir: Path, spec: StageSpec) -> Path | None:
    exact = stages_dir / spec.dir_name / "output.json"
    if exact.is_file():
        return exact
    matches = sorted(stages_dir.glob(f"*-{spec.slug}/output.json"))
    return matches[0] if matches else None


def _load_output(path: Path, spec: StageSpec) -> StageOutput:
    data = _read_json(path)
    if not isinstance(data, dict):
        raise SessionCorrupt(str(path), "expected a JSON object")
    try:
        return spec.output_model.model_validate(data)
    except ValidationError as exc:
        raise SessionCorrupt(str(path), _why(exc)) from None


def _tool_calls(path: Path) -> list[dict[str, Any]]:
    text = _read_text(path)
    lines = text.split("\n")
    calls: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) and not text.endswith("\n"):
                break  # a crash mid-append left a partial last line
            raise SessionCorrupt(str(path), f"line {number} is not JSON") from None
        if not isinstance(event, dict):
            raise SessionCorrupt(str(path), f"line {number} is not a JSON object")
        if event.get("type") == "tool_call" and isinstance(event.get("data"), dict):
            calls.append({**event["data"], "stage": event.get("stage")})
    return calls


def load_snapshot(path: Path) -> Snapshot:
    """Load the session folder at ``path`` (validates what exists).

    Raises:
        SessionNotFound: ``path`` is not a folder.
        SessionCorrupt: a session file exists but cannot be read or does not match its schema.
    """
    root = Path(path)
    if not root.is_dir():
        raise SessionNotFound(f"No session folder at {root}.")
    idea_file = root / "idea.md"
    if not idea_file.is_file():
        raise SessionCorrupt(str(idea_file), "the file is missing, so this is not a session folder")
    idea = _read_text(idea_file)

    anchor: ConceptAnchor | None = None
    anchor_file = root / "concept_anchor.json"
    if anchor_file.is_file():
        data = _read_json(anchor_file)
        try:
            anchor = ConceptAnchor.model_validate(data)
        except ValidationError as exc:
            raise SessionCorrupt(str(anchor_file), _why(exc)) from None

    outputs: dict[str, StageOutput] = {}
    stages_dir = root / "stages"
    if stages_dir.is_dir():
        for spec in STAGES:
            file = _stage_file(stages_dir, spec)
            if file is not None:
                outputs[spec.slug] = _load_output(file, spec)

    events = root / "events.jsonl"
    tool_calls = _tool_calls(events) if events.is_file() else []
    return Snapshot(
        idea=idea,
        anchor=anchor,
        outputs=MappingProxyType(outputs),
        tool_calls=tuple(MappingProxyType(c) for c in tool_calls),
    )
