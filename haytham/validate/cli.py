"""``haytham validate SESSION_ID_OR_PATH [--json]``: every validator over a saved session folder.

Prints a findings table (or JSON) and exits 0 even when there are findings; an unreadable
session prints one sentence to stderr and exits 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from haytham.errors import HaythamError
from haytham.validate.embeddings import Embedder
from haytham.validate.loader import load_snapshot
from haytham.validate.model import ValidationReport, ValidatorSettings
from haytham.validate.runner import run_validators


def resolve_session(target: str, sessions_dir: Path) -> Path | None:
    """A folder path (also a session copied elsewhere), else a session id under ``sessions_dir``."""
    path = Path(target).expanduser()
    if path.is_dir():
        return path
    if target and "/" not in target and "\\" not in target and target not in (".", ".."):
        candidate = Path(sessions_dir) / target
        if candidate.is_dir():
            return candidate
    return None


def report_json(report: ValidationReport) -> dict[str, object]:
    """The CLI's JSON: findings plus ``divergence`` as slug -> similarity to the anchor."""
    return {
        "findings": [f.model_dump(mode="json") for f in report.findings],
        "divergence": {
            slug: row["anchor"] for slug, row in report.divergence.items() if "anchor" in row
        },
    }


def render_table(report: ValidationReport) -> str:
    lines: list[str] = []
    if not report.findings:
        lines.append("No findings.")
    else:
        header = ("SEVERITY", "VALIDATOR", "STAGE", "INVARIANT", "MESSAGE")
        rows = [
            (f.severity, f.validator, f.stage or "-", f.invariant or "-", f.message)
            for f in report.findings
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
        lines.append(fmt.format(*header))
        for f, row in zip(report.findings, rows, strict=True):
            lines.append(fmt.format(*row))
            if f.evidence:
                lines.append(" " * (sum(widths) + 8) + f"evidence: {f.evidence}")
        blocking = len(report.blocking())
        lines.append(f"\n{len(report.findings)} finding(s), {blocking} blocking.")
    if report.divergence:
        lines.append("\nDivergence (cosine similarity of each stage to the idea / the anchor):")
        for slug, row in report.divergence.items():
            anchor = f"{row['anchor']:.2f}" if "anchor" in row else "-"
            lines.append(f"  {slug:<24} idea {row['idea']:.2f}  anchor {anchor}")
    return "\n".join(lines)


def cli_main(
    target: str,
    *,
    as_json: bool,
    sessions_dir: Path,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Validate one saved session and print the report; returns the exit code (0, or 2)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    folder = resolve_session(target, sessions_dir)
    if folder is None:
        print(
            f"No session {target!r}: it is neither a folder nor a session id under {sessions_dir}.",
            file=err,
        )
        return 2
    try:
        snap = load_snapshot(folder)
        settings = ValidatorSettings.from_env()
        embedder = Embedder() if settings.embeddings else None
        report = run_validators(snap, settings=settings, embedder=embedder)
    except HaythamError as exc:
        print(str(exc), file=err)
        return 2
    if as_json:
        print(json.dumps(report_json(report), indent=2, ensure_ascii=False), file=out)
    else:
        print(render_table(report), file=out)
    return 0
