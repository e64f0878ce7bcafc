"""Labelled drift cases and per-validator calibration counts (ADR-022 7c).

A case is a folder with a ``label.json``::

    {"drift": null | "<kind>", "expected_validator": "<name>" | ["<name>", ...] | null,
     "stage": "<slug>" (optional: the finding must be about this stage), "note": "..."}

and either the session files themselves (the public session-folder layout) or a ``patch.json``
that derives the case from another case folder, so one faithful session can carry many injected
drifts without copying it::

    {"base": "power_of_8", "patches": [
        {"op": "set", "file": "stages/05-mvp-scope/output.json", "path": "/payload/appetite",
         "value": "small"},                      # JSON pointer; "-" appends to a list
        {"op": "remove", "file": "...", "path": "/payload/in_scope/2"},
        {"op": "replace_text", "file": "...", "find": "live video", "replace": "message board"},
        {"op": "delete", "file": "stages/10-story-generation"},
        {"op": "append_event", "value": {"ts": "...", "type": "tool_call", ...}},
        {"op": "drop_events", "match": "substring of the JSON line"}]}

``replace_text`` rewrites every string value of the JSON file (or of the sub-tree at ``path``) and
fails if nothing matched, so a patch cannot silently stop applying.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haytham.validate.model import VALIDATOR_NAMES, ValidationReport


class CaseError(ValueError):
    """A case folder or patch is malformed (names the case)."""


@dataclass(frozen=True)
class Case:
    """One labelled calibration case: a session folder and the validators expected to flag it
    (``drift is None``: a faithful session that nothing should flag)."""

    name: str
    path: Path
    drift: str | None
    expected: tuple[str, ...]
    stage: str | None = None
    note: str = ""


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise CaseError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def _set(doc: Any, path: str, value: Any) -> None:
    parts = _pointer(path)
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            parent[int(last)] = value
    else:
        parent[last] = value


def _remove(doc: Any, path: str) -> None:
    parts = _pointer(path)
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    del parent[int(last) if isinstance(parent, list) else last]


def _replace_text(node: Any, find: str, replace: str) -> tuple[Any, int]:
    if isinstance(node, str):
        return node.replace(find, replace), node.count(find)
    if isinstance(node, list):
        pairs = [_replace_text(v, find, replace) for v in node]
        return [p[0] for p in pairs], sum(p[1] for p in pairs)
    if isinstance(node, dict):
        out, total = {}, 0
        for k, v in node.items():
            out[k], n = _replace_text(v, find, replace)
            total += n
        return out, total
    return node, 0


def apply_patch(folder: Path, patch: dict[str, Any], *, case: str = "") -> None:
    """Apply one patch operation to the session copy in ``folder``."""
    op = patch.get("op")
    where = f"case {case}: {op}"
    if op in ("append_event", "drop_events"):
        events = folder / "events.jsonl"
        lines = events.read_text(encoding="utf-8").splitlines() if events.exists() else []
        if op == "append_event":
            lines.append(json.dumps(patch["value"], ensure_ascii=False))
        else:
            kept = [ln for ln in lines if patch["match"] not in ln]
            if len(kept) == len(lines):
                raise CaseError(f"{where}: no event line contains {patch['match']!r}")
            lines = kept
        events.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
        return
    target = folder / patch["file"]
    if op == "delete":
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        else:
            raise CaseError(f"{where}: {patch['file']} does not exist")
        return
    doc = json.loads(target.read_text(encoding="utf-8"))
    try:
        if op == "set":
            _set(doc, patch["path"], patch["value"])
        elif op == "remove":
            _remove(doc, patch["path"])
        elif op == "replace_text":
            path: str = patch.get("path") or ""
            parts = _pointer(path) if path else []
            sub = _walk(doc, parts) if parts else doc
            new, count = _replace_text(sub, patch["find"], patch["replace"])
            if count == 0:
                raise CaseError(f"{where}: {patch['find']!r} not found in {patch['file']}")
            if parts:
                _set(doc, path, new)
            else:
                doc = new
        else:
            raise CaseError(f"{where}: unknown op")
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, CaseError):
            raise
        raise CaseError(f"{where} {patch.get('path', '')}: {exc}") from None
    target.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _expected(label: dict[str, Any]) -> tuple[str, ...]:
    exp = label.get("expected_validator")
    names = (exp,) if isinstance(exp, str) else tuple(exp or ())
    unknown = [n for n in names if n not in VALIDATOR_NAMES]
    if unknown:
        raise CaseError(f"unknown expected_validator {unknown}")
    return names


def load_case(folder: Path, workdir: Path) -> Case:
    """One case folder; a patched case is materialised under ``workdir``/<name>."""
    folder = Path(folder)
    label = json.loads((folder / "label.json").read_text(encoding="utf-8"))
    path = folder
    patch_file = folder / "patch.json"
    if patch_file.is_file():
        spec = json.loads(patch_file.read_text(encoding="utf-8"))
        base = folder.parent / spec["base"]
        if not (base / "idea.md").is_file():
            raise CaseError(f"case {folder.name}: base {spec['base']!r} is not a session")
        path = Path(workdir) / folder.name
        if path.exists():
            shutil.rmtree(path)
        shutil.copytree(base, path, ignore=shutil.ignore_patterns("label.json", "patch.json"))
        for patch in spec.get("patches", []):
            apply_patch(path, patch, case=folder.name)
    try:
        expected = _expected(label)
    except CaseError as exc:
        raise CaseError(f"case {folder.name}: {exc}") from None
    return Case(
        folder.name, path, label.get("drift"), expected, label.get("stage"), label.get("note", "")
    )


def load_cases(root: Path, workdir: Path) -> list[Case]:
    """Every case under ``root`` (sorted by name); patched cases are materialised in ``workdir``."""
    return [
        load_case(folder, workdir)
        for folder in sorted(p for p in Path(root).iterdir() if (p / "label.json").is_file())
    ]


@dataclass
class Counts:
    """One validator's tallies over the cases (see :func:`score`)."""

    tp: int = 0
    fp: int = 0
    misses: int = 0
    other: int = 0  # fired on a drift case labelled for another validator (not counted as FP)


@dataclass
class Calibration:
    """Per-validator counts plus overall detection and false-positive rates."""

    per_validator: dict[str, Counts] = field(default_factory=dict)
    drift_cases: int = 0
    detected: int = 0
    faithful_cases: int = 0
    faithful_flagged: int = 0
    missed: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)

    @property
    def detection_rate(self) -> float:
        """Share of drift cases an expected validator caught (1.0 with no drift cases)."""
        return self.detected / self.drift_cases if self.drift_cases else 1.0

    @property
    def false_positive_rate(self) -> float:
        """Share of faithful cases with any warning-or-worse finding (0.0 with none)."""
        return self.faithful_flagged / self.faithful_cases if self.faithful_cases else 0.0


def _fired(report: ValidationReport, name: str, stage: str | None) -> bool:
    """Whether ``name`` flagged (warning or worse) the case, about ``stage`` if given.

    Second opinions (``info``) are not counted: they are not shown for a decision, so they
    neither catch a drift nor flag a faithful session."""
    return any(
        f.validator == name and (stage is None or f.stage == stage) for f in report.flagged()
    )


def score(
    results: Iterable[tuple[Case, ValidationReport]], validators: Sequence[str] = VALIDATOR_NAMES
) -> Calibration:
    """Per validator: TP (fired on a case it is expected for), FP (fired on a faithful case),
    misses (expected, and no expected validator caught the case), other (fired on a drift case
    labelled for another validator: often a true side effect, never counted as FP)."""
    cal = Calibration(per_validator={v: Counts() for v in validators})
    for case, report in results:
        if case.drift is None:
            cal.faithful_cases += 1
            if report.flagged():
                cal.faithful_flagged += 1
                cal.flagged.append(case.name)
            for v in validators:
                if _fired(report, v, None):
                    cal.per_validator[v].fp += 1
            continue
        cal.drift_cases += 1
        hit = any(_fired(report, v, case.stage) for v in case.expected)
        cal.detected += hit
        if not hit:
            cal.missed.append(case.name)
        for v in validators:
            fired = _fired(report, v, case.stage if v in case.expected else None)
            if v in case.expected:
                if fired:
                    cal.per_validator[v].tp += 1
                elif not hit:
                    cal.per_validator[v].misses += 1
            elif fired:
                cal.per_validator[v].other += 1
    return cal
