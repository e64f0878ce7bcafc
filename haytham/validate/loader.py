"""Read a saved session folder (the public layout the pipeline writes) into a :class:`Snapshot`.

Layout: ``idea.md``, optional ``concept_anchor.json``, ``stages/<NN>-<slug>/output.json`` (each
validated with its stage's ``output_model``; extra keys such as ``stage`` or ``validations`` are
ignored) and optional ``events.jsonl`` (``tool_call`` events become ``Snapshot.tool_calls``).
Missing later stages are fine; a file that exists but cannot be read or parsed raises
:class:`~haytham.errors.SessionCorrupt` naming the file. A truncated *last* line of
``events.jsonl`` without a trailing newline (a crash mid-append) is skipped. Like every other
command, nothing is read through a symbolic link: a linked session folder, or a linked file or
folder inside it, raises :class:`~haytham.errors.InputError` naming it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from haytham.errors import InputError, SessionCorrupt, SessionNotFound
from haytham.schemas.anchor import ConceptAnchor
from haytham.schemas.envelope import StageOutput
from haytham.stages import STAGES
from haytham.stages.base import StageSpec
from haytham.storage.folder import NOFOLLOW, link_refused
from haytham.validate.model import Snapshot


def _refuse_links(root: Path, path: Path) -> None:
    """Refuse ``path`` if it, or a folder between ``root`` and it, is a symbolic link."""
    rel = path.relative_to(root)
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            shown = current.relative_to(root).as_posix()
            raise link_refused(f"Session file {shown} in session {root.name}")


def _read_text(path: Path, root: Path | None = None) -> str:
    """The file's text, opened without following a symbolic link (checked from ``root``)."""
    try:
        if root is not None:
            _refuse_links(root, path)
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            if path.is_symlink():
                raise link_refused(f"Session file {path}") from None
            raise
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SessionCorrupt(str(path), "it is not a regular file")
            return fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionCorrupt(str(path), type(exc).__name__ + ": " + str(exc)) from None


def _read_json(path: Path, root: Path | None = None) -> Any:
    try:
        return json.loads(_read_text(path, root))
    except json.JSONDecodeError as exc:
        raise SessionCorrupt(str(path), f"invalid JSON ({exc.msg} at line {exc.lineno})") from None


def _why(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"does not match its schema: {loc}: {first.get('msg', '')}{more}"


def _stage_file(stages_dir: Path, spec: StageSpec) -> Path | None:
    exact = stages_dir / spec.dir_name / "output.json"
    if os.path.lexists(exact):  # a link, even a dangling one, is found (and refused)
        return exact
    matches = sorted(
        p / "output.json"
        for p in stages_dir.glob(f"*-{spec.slug}")
        if os.path.lexists(p / "output.json")
    )
    return matches[0] if matches else None


def _load_output(path: Path, spec: StageSpec, root: Path | None = None) -> StageOutput:
    data = _read_json(path, root)
    if not isinstance(data, dict):
        raise SessionCorrupt(str(path), "expected a JSON object")
    try:
        return spec.output_model.model_validate(data)
    except ValidationError as exc:
        raise SessionCorrupt(str(path), _why(exc)) from None


def _tool_calls(path: Path, root: Path | None = None) -> list[dict[str, Any]]:
    text = _read_text(path, root)
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
        InputError: the folder, or a file or folder in it, is a symbolic link.
    """
    root = Path(path)
    if root.is_symlink():
        raise InputError(f"Session folder {root} is a symbolic link; refusing to follow it.")
    if not root.is_dir():
        raise SessionNotFound(f"No session folder at {root}.")
    idea_file = root / "idea.md"
    if not os.path.lexists(idea_file):
        raise SessionCorrupt(str(idea_file), "the file is missing, so this is not a session folder")
    idea = _read_text(idea_file, root)

    anchor: ConceptAnchor | None = None
    anchor_file = root / "concept_anchor.json"
    if os.path.lexists(anchor_file):
        data = _read_json(anchor_file, root)
        try:
            anchor = ConceptAnchor.model_validate(data)
        except ValidationError as exc:
            raise SessionCorrupt(str(anchor_file), _why(exc)) from None

    outputs: dict[str, StageOutput] = {}
    stages_dir = root / "stages"
    if stages_dir.is_symlink():
        _refuse_links(root, stages_dir)
    if stages_dir.is_dir():
        for spec in STAGES:
            file = _stage_file(stages_dir, spec)
            if file is not None:
                outputs[spec.slug] = _load_output(file, spec, root)

    events = root / "events.jsonl"
    tool_calls = _tool_calls(events, root) if os.path.lexists(events) else []
    return Snapshot(
        idea=idea,
        anchor=anchor,
        outputs=MappingProxyType(outputs),
        tool_calls=tuple(MappingProxyType(c) for c in tool_calls),
    )
