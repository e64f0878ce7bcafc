"""``haytham validate SESSION_ID_OR_PATH [--json]``: every validator over a saved session folder.

Prints a findings table (or JSON) and exits 0 even when there are findings; an unreadable
session, a symbolic link (the folder, or a file in it) or a malformed target (a NUL byte, an
over-long path) prints one sentence to stderr and exits 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from haytham.errors import HaythamError, InputError
from haytham.validate.embeddings import Embedder
from haytham.validate.loader import load_snapshot
from haytham.validate.model import Finding, ValidationReport, ValidatorSettings
from haytham.validate.runner import run_validators

MAX_TARGET = 4096  # PATH_MAX on Linux; a longer target cannot name a folder


def shown_target(target: str) -> str:
    """``target`` as a message quotes it: never a 10,000-character echo."""
    return repr(target) if len(target) <= 80 else repr(target[:40] + "…") + " (too long)"


def resolve_session(target: str, sessions_dir: Path) -> Path | None:
    """A folder path (also a session copied elsewhere), else a session id under ``sessions_dir``.

    Raises:
        InputError: ``target`` holds a NUL byte or is too long to be a path, or the folder it
            names is a symbolic link (refused, as every other command refuses one).
    """
    if "\x00" in target:
        raise InputError(
            f"Invalid session id or folder {shown_target(target)}: it holds a NUL byte."
        )
    if len(target) > MAX_TARGET:
        raise InputError(
            f"Invalid session id or folder {shown_target(target)}: it is longer than a path can be."
        )
    try:
        path = Path(target).expanduser()
        if path.is_symlink():
            raise InputError(f"Session folder {target} is a symbolic link; refusing to follow it.")
        if path.is_dir():
            return path
        if target and "/" not in target and "\\" not in target and target not in (".", ".."):
            candidate = Path(sessions_dir) / target
            if candidate.is_symlink():
                raise InputError(
                    f"Session {shown_target(target)} is a symbolic link; refusing to follow it."
                )
            if candidate.is_dir():
                return candidate
    except (OSError, RuntimeError) as exc:  # a name too long, a loop, no home folder for ~
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(
            f"Cannot open session {shown_target(target)}: {why.rstrip('.')}."
        ) from None
    return None


def report_json(report: ValidationReport) -> dict[str, object]:
    """The CLI's JSON: findings (info ones included) and the per-stage curve."""
    return {
        "findings": [f.model_dump(mode="json") for f in report.findings],
        "divergence": report.divergence,
    }


def _table(findings: list[Finding]) -> list[str]:
    header = ("SEVERITY", "VALIDATOR", "STAGE", "ITEM", "INVARIANT", "MESSAGE")
    rows = [
        (f.severity, f.validator, f.stage or "-", f.item or "-", f.invariant or "-", f.message)
        for f in findings
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    lines = [fmt.format(*header)]
    for f, row in zip(findings, rows, strict=True):
        lines.append(fmt.format(*row))
        if f.evidence:
            lines.append(" " * (sum(widths) + 10) + f"evidence: {f.evidence}")
    return lines


def render_table(report: ValidationReport, *, second_opinions: bool = True) -> str:
    """Findings that need a decision, then (unless hidden) the prose checks' second opinions."""
    flagged = report.flagged()
    info = [f for f in report.findings if not f.needs_decision]
    lines: list[str] = _table(flagged) if flagged else ["No findings that need a decision."]
    if flagged:
        lines.append(f"\n{len(flagged)} finding(s), {len(report.blocking())} blocking.")
    if info and second_opinions:
        lines.append(f"\nSecond opinions from prose checks ({len(info)}; they never block):")
        lines += _table(info)
    if report.divergence:
        lines.append(
            "\nPer stage: fidelity (how much more it reads like this idea than like the generic "
            "product the anchor rules out; below 0 it reads generic) and cosine similarity to "
            "the idea / the anchor:"
        )
        for slug, row in report.divergence.items():
            cells = "  ".join(
                f"{k} {row[k]:.2f}" if k in row else f"{k} -"
                for k in ("fidelity", "idea", "anchor")
            )
            lines.append(f"  {slug:<24} {cells}")
    return "\n".join(lines)


def cli_main(
    target: str,
    *,
    as_json: bool,
    sessions_dir: Path,
    validators: ValidatorSettings | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Validate one saved session and print the report; returns the exit code (0, or 2).

    ``validators`` is the settings' ``validators`` section (defaults when not given)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        folder = resolve_session(target, sessions_dir)
    except HaythamError as exc:
        print(str(exc), file=err)
        return 2
    if folder is None:
        print(
            f"No session {shown_target(target)}: it is neither a folder nor a session id under "
            f"{sessions_dir}.",
            file=err,
        )
        return 2
    try:
        snap = load_snapshot(folder)
        settings = validators if validators is not None else ValidatorSettings()
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
