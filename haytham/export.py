"""Exports of a session: Markdown (for people), JSON (everything), CSV (stories).

CSV, Jira and Linear cells that a spreadsheet would run as a formula are neutralised
(:func:`haytham.sanitize.spreadsheet_cell`, per OWASP's CSV-injection guidance); Markdown carries
no control characters and its table cells are escaped (:mod:`haytham.render`); JSON keeps every
string as written, with DEL and C1 control characters as ``\\u`` escapes (:func:`json_text`).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from haytham.blockers import target_name
from haytham.errors import InputError, StorageError
from haytham.pipeline.state import SessionState, payload_of
from haytham.render import render_stage
from haytham.sanitize import spreadsheet_cell, terminal_safe
from haytham.stages import STAGES, STORY_STAGE
from haytham.store import write_synced

FORMATS = ("markdown", "json", "csv", "jira", "linear", "pdf", "validation-pdf")
BINARY = ("pdf", "validation-pdf")  # bytes, written to a file (--output), never to a terminal
_C1 = re.compile("[\x7f-\x9f]")


def json_text(data: Any) -> str:
    """``data`` as indented JSON that is safe on a terminal and loses nothing.

    ``json.dumps`` escapes C0 controls (ESC included) but writes DEL and the C1 controls (0x9b
    CSI, 0x9d OSC, …) raw when ``ensure_ascii`` is off; they are written as ``\\u`` escapes
    here, so the text is the same JSON value and a terminal sees no escape sequence.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _overrides(state: SessionState) -> list[dict[str, Any]]:
    return [
        {"gate": n, **o.model_dump(mode="json")}
        for n, g in sorted(state.gates.items())
        for o in g.overrides
    ]


def to_json(state: SessionState) -> str:
    dumped = state.dump()
    data = {
        k: dumped[k]
        for k in (
            "session_id",
            "status",
            "idea",
            "appetite",
            "anchor",
            "outputs",
            "gates",
            "verifications",
            "validations",
            "review_log",
            "revisions",
        )
    }
    data["overrides"] = _overrides(state)
    return json_text(data) + "\n"


def to_markdown(state: SessionState) -> str:
    parts = [
        f"# Haytham specification — {state.session_id or ''}",
        "",
        "## The idea",
        "",
        state.idea,
        "",
    ]
    if state.anchor_text:
        parts += ["## Concept anchor", "", "```", state.anchor_text, "```", ""]
    parts += [
        render_stage(s, state.outputs[s.slug].model_dump(mode="json"))
        for s in STAGES
        if s.slug in state.outputs
    ]
    overrides = _overrides(state)
    if overrides:
        parts += ["## Overrides", ""]
        parts += [
            f"- Gate {o['gate']}: {target_name(o['target'])} — {o['reason']}"
            + (" (auto)" if o.get("auto") else "")
            for o in overrides
        ]
    for n, g in sorted(state.gates.items()):
        if g.rework_stage:
            parts.append(f"- Gate {n} rework of {g.rework_stage}: {g.feedback}")
    if state.revisions:
        parts += ["", "## Change requests", ""]
        for r in state.revisions:
            parts.append(f"- {r.at} · {r.stage}: “{r.request}” — {r.why}")
            parts += [f"  - {c.kind} {c.where}" for c in r.changes]
    return terminal_safe("\n".join(parts).rstrip() + "\n")


def stories(state: SessionState) -> list[dict[str, Any]]:
    """The stories in their computed order, as plain data."""
    payload = payload_of(state.outputs, STORY_STAGE.slug)
    if payload is None:
        return []
    by_id = {s.id: s.model_dump(mode="json") for s in payload.stories}
    return [by_id[i] for i in payload.order or list(by_id) if i in by_id]


def _csv(rows: list[dict[str, Any]], fields: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: spreadsheet_cell(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def _criteria(story: Mapping[str, Any]) -> str:
    return "\n".join(f"- {c}" for c in story.get("acceptance_criteria", []))


def to_csv(state: SessionState, flavour: str = "csv") -> str:
    items = stories(state)
    if not items:
        raise InputError("This session has no stories yet; export markdown or json instead.")
    if flavour == "jira":
        rows = [
            {
                "Summary": s["title"],
                "Issue Type": "Story",
                "Issue id": s["id"],
                "Description": f"{s.get('description', '')}\n\nAcceptance criteria:\n"
                f"{_criteria(s)}\n\nImplements: {', '.join(s['implements'])}",
                "Component/s": s.get("component", ""),
                "Labels": s.get("layer", ""),
                "Blocked by": " ".join(s.get("depends_on", [])),
            }
            for s in items
        ]
        return _csv(
            rows,
            [
                "Issue id",
                "Summary",
                "Issue Type",
                "Description",
                "Component/s",
                "Labels",
                "Blocked by",
            ],
        )
    if flavour == "linear":
        rows = [
            {
                "Title": f"{s['id']} {s['title']}",
                "Description": f"{s.get('description', '')}\n\n{_criteria(s)}",
                "Labels": ",".join(filter(None, [s.get("layer"), s.get("component")])),
                "Status": "Backlog",
                "Priority": "",
                "Estimate": "",
            }
            for s in items
        ]
        return _csv(rows, ["Title", "Description", "Labels", "Status", "Priority", "Estimate"])
    rows = [
        {
            **s,
            "position": n,
            "implements": " ".join(s["implements"]),
            "depends_on": " ".join(s.get("depends_on", [])),
            "acceptance_criteria": " | ".join(s.get("acceptance_criteria", [])),
            "technologies": " ".join(s.get("technologies", [])),
        }
        for n, s in enumerate(items, 1)
    ]
    return _csv(
        rows,
        [
            "position",
            "id",
            "title",
            "component",
            "layer",
            "implements",
            "depends_on",
            "acceptance_criteria",
            "technologies",
            "description",
        ],
    )


def export(state: SessionState, fmt: str) -> str | bytes:
    """``state`` in ``fmt``: text, or PDF bytes for the two reports (:mod:`haytham.report`)."""
    if fmt not in FORMATS:
        raise InputError(f"Export format must be one of {', '.join(FORMATS)}, not {fmt!r}.")
    if fmt in BINARY:
        from haytham.report import report  # reportlab is imported only for a report

        return report(state, "specification" if fmt == "pdf" else "validation")
    if fmt == "markdown":
        return to_markdown(state)
    if fmt == "json":
        return to_json(state)
    return to_csv(state, fmt)


def write_export(path: Path, text: str | bytes) -> None:
    """Write an export to the file ``path``: whole or not at all, one sentence on any problem."""
    shown = str(path) if len(str(path)) <= 200 else str(path)[:200] + "…"
    if "\x00" in str(path):
        raise InputError("The --output path contains a NUL character.")
    try:
        if path.is_dir():
            raise InputError(f"--output {shown} is a folder; name a file inside it.")
        if not path.parent.is_dir():
            raise InputError(f"The folder of --output {shown} does not exist; create it first.")
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            _write_device(path, text)  # /dev/stdout, /dev/null, a pipe: no file to replace
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:50]}.", dir=path.parent)
    except OSError as exc:
        raise _export_error(shown, exc) from None
    try:
        write_synced(fd, text)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _export_error(shown, exc) from None


def _write_device(path: Path, text: str | bytes) -> None:
    """Write to an existing device or pipe named by --output (there is no file to replace)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    with path.open("wb") as fh:
        fh.write(data)
        fh.flush()


def _export_error(shown: str, exc: OSError) -> StorageError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        why = "that place is not writable"
    elif exc.errno == errno.ENAMETOOLONG:
        why = "the name is too long"
    else:
        why = exc.strerror or type(exc).__name__
    return StorageError(f"Could not write the export to {shown}: {why}, so nothing was written.")
