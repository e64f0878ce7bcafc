"""Exports of a session: Markdown (for people), JSON (everything), CSV (stories; Jira and Linear
flavours), the competitor map as CSV.

Story dependencies travel in every story export: the CSV's ``depends_on``, Jira's ``Blocked by``
column, and for Linear (whose CSV importer has no dependency field) a ``Blocked by: S-2, S-3``
line at the top of each description plus a ``Blocked by`` column to map or read.

CSV, Jira and Linear cells that a spreadsheet would run as a formula are neutralised
(:func:`haytham.safety.sanitize.spreadsheet_cell`, per OWASP's CSV-injection guidance); Markdown carries
no control characters and its table cells are escaped (:mod:`haytham.stages.render`); JSON keeps every
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from haytham.changes.impact import impact_lines
from haytham.errors import InputError, StorageError
from haytham.pipeline.staleness import stale_checks
from haytham.reports.blockers import target_name
from haytham.reports.caveats import anchor_lines, check_caveats, open_questions
from haytham.safety.sanitize import spreadsheet_cell, terminal_safe
from haytham.stages import STAGES, STORY_STAGE, market_context, risk_assessment, validation_summary
from haytham.stages.render import render_stage
from haytham.state import SessionState, payload_of
from haytham.storage.folder import write_synced

FORMATS = ("markdown", "json", "csv", "jira", "linear", "competitors", "pdf", "validation-pdf")
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


def to_json(state: SessionState, record: Sequence[str] = ()) -> str:
    """The whole session as JSON: idea, anchor, every output, gate, check and change request,
    plus overrides, caveats, stale checks, open questions and the decision ``record`` lines."""
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
    data["caveats"] = check_caveats(state)
    data["stale_checks"] = [
        {"gate": c.phase.gate, "stage": c.stage, "changed": list(c.changed)}
        for c in stale_checks(state)
    ]
    data["open_questions"] = open_questions(state)
    if record:
        data["decision_record"] = list(record)
    return json_text(data) + "\n"


def to_markdown(state: SessionState, record: Sequence[str] = ()) -> str:
    """The specification for people: caveats first, the idea, the anchor and where its values
    came from, open questions, each stage's output, overrides, reworks, change requests and
    the decisions on record."""
    parts = [f"# Haytham specification — {state.session_id or ''}", ""]
    caveats = check_caveats(state)
    if caveats:
        parts += ["> **Read this first.**", *[f"> - {c}" for c in caveats], ""]
    parts += ["## The idea", "", state.idea, ""]
    if state.anchor_text:
        parts += ["## Concept anchor", "", "```", state.anchor_text, "```", ""]
        parts += ["Where each value came from:", "", *[f"- {x}" for x in anchor_lines(state)], ""]
    questions = open_questions(state)
    if questions:
        parts += ["## Open questions", "", *[f"- {q}" for q in questions], ""]
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
            if r.impact is not None:
                touched = ", ".join(r.impact.touched) or "none"
                parts.append(f"  - Invariants touched (code's check): {touched}")
                parts += [f"    - {line}" for line in impact_lines(r.impact)]
                parts += [f"    - Disagreement: {d}" for d in r.impact.disagreements()]
    if record:  # who decided (haytham/people/audit.py)
        parts += ["", "## Decisions on record", "", *(f"- {line}" for line in record)]
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


def _blocked_line(story: Mapping[str, Any]) -> str:
    """``Blocked by: S-2, S-3`` and a blank line, for a description; empty without dependencies."""
    deps = story.get("depends_on", [])
    return f"Blocked by: {', '.join(deps)}\n\n" if deps else ""


COMPETITOR_COLUMNS = (
    "id",
    "competitor",
    "job, for whom",
    "same job?",
    "pricing evidence",
    "pricing from",
    "switching cost",
    "gap we use",
    "cited by",
)


def competitor_rows(state: SessionState) -> list[dict[str, str]]:
    """The market's competitor map as rows (the UI's table and the CSV): an empty job or gap
    says why, a downgraded pricing source says so, and each row names the risks and scorecard
    dimensions that cite it."""
    market = payload_of(state.outputs, market_context.SPEC.slug)
    if market is None:
        return []
    cites: dict[str, list[str]] = {}
    risks = payload_of(state.outputs, risk_assessment.SPEC.slug)
    for n, r in enumerate(risks.risks if risks is not None else [], 1):
        for ref in r.competitors:
            cites.setdefault(ref, []).append(f"risk {n}")
    summary = payload_of(state.outputs, validation_summary.SPEC.slug)
    for d in summary.dimensions if summary is not None else []:
        for ref in d.competitors:
            cites.setdefault(ref, []).append(f"score: {d.name}")
    return [
        {
            "id": c.id,
            "competitor": c.name,
            "job, for whom": c.job_shown,
            "same job?": c.jtbd_match,
            "pricing evidence": c.pricing_evidence,
            "pricing from": c.shown_pricing_source,
            "switching cost": c.switching_cost,
            "gap we use": c.gap_shown,
            "cited by": "; ".join(cites.get(c.id, [])),
        }
        for c in market.competitors
    ]


def to_competitors_csv(state: SessionState) -> str:
    """The competitor map as CSV (cells neutralised like every CSV export)."""
    rows = competitor_rows(state)
    if not rows:
        raise InputError(
            "This session has no competitor map yet (market context lists none); export "
            "markdown or json instead."
        )
    return _csv(rows, list(COMPETITOR_COLUMNS))


def to_csv(state: SessionState, flavour: str = "csv") -> str:
    """The stories as CSV in their computed order (``flavour``: ``csv``, ``jira`` or ``linear`` columns);
    ``InputError`` when the session has no stories yet."""
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
                "Description": _blocked_line(s) + f"{s.get('description', '')}\n\n{_criteria(s)}",
                "Labels": ",".join(filter(None, [s.get("layer"), s.get("component")])),
                "Status": "Backlog",
                "Priority": "",
                "Estimate": "",
                "Blocked by": ", ".join(s.get("depends_on", [])),
            }
            for s in items
        ]
        return _csv(
            rows,
            ["Title", "Description", "Labels", "Status", "Priority", "Estimate", "Blocked by"],
        )
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


def export(state: SessionState, fmt: str, record: Sequence[str] = ()) -> str | bytes:
    """``state`` in ``fmt``: text, or PDF bytes for the two reports (:mod:`haytham.reports.pdf`);
    ``record``: the decision record's sentences (approved by … on …) for the reports, the
    Markdown and the JSON."""
    if fmt not in FORMATS:
        raise InputError(f"Export format must be one of {', '.join(FORMATS)}, not {fmt!r}.")
    if fmt in BINARY:
        from haytham.reports.pdf import report  # reportlab is imported only for a report

        return report(state, "specification" if fmt == "pdf" else "validation", record)
    if fmt == "markdown":
        return to_markdown(state, record)
    if fmt == "json":
        return to_json(state, record)
    if fmt == "competitors":
        return to_competitors_csv(state)
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
