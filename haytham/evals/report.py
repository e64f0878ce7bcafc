"""The report: ``<reports-dir>/<timestamp>/report.json`` + ``summary.md``, and the regression diff.

The previous report is the newest earlier *accepted* one (complete, not itself a regression) with
the same *comparable key* (providers and model ids), so a replay run is never compared with a live
one and a regression keeps failing until it is fixed. A regression is a rubric score on
an idea more than ``tolerance`` below the previous one, a score that disappeared (unless this run
is partial), an overall mean more than ``tolerance`` lower, or a deterministic check that passed
before and fails now.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haytham.stages import idea_analysis, mvp_scope, story_generation
from haytham.storage.folder import atomic_write

SCHEMA = "haytham-eval-report/1"
REPORT, SUMMARY = "report.json", "summary.md"


def new_run_dir(reports_dir: Path) -> Path:
    """A fresh ``<UTC timestamp>`` folder (``-2``, ``-3`` … when one already exists)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate, n = reports_dir / stamp, 1
    while candidate.exists():
        n += 1
        candidate = reports_dir / f"{stamp}-{n}"
    candidate.mkdir(parents=True)
    return candidate


def read_report(path: Path) -> dict[str, Any] | None:
    """The report in ``path`` (a run folder or its ``report.json``); None when it is missing,
    unreadable or of another schema."""
    file = path / REPORT if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def list_reports(reports_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable report under ``reports_dir``, oldest first."""
    if not reports_dir.is_dir():
        return []
    found = []
    dirs = [p for p in reports_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    for child in sorted(dirs):
        data = read_report(child)
        if data is not None:
            found.append((child, data))
    return found


def accepted(data: Mapping[str, Any]) -> bool:
    """A report that may serve as a baseline: complete, and not itself a regression."""
    return not data.get("partial") and bool((data.get("comparison") or {}).get("passed", True))


def find_previous(reports_dir: Path, current: Path, comparable: str) -> Path | None:
    """The newest earlier accepted report with the same comparable key (a regression stays a
    regression until it is fixed, instead of becoming the next run's baseline)."""
    earlier = [
        p
        for p, data in list_reports(reports_dir)
        if p.name < current.name
        and accepted(data)
        and data.get("config", {}).get("comparable") == comparable
    ]
    return earlier[-1] if earlier else None


def _scores(report: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    out: dict[tuple[str, str], float | None] = {}
    for idea in report.get("ideas", []):
        for rid, j in (idea.get("judgements") or {}).items():
            out[(idea["id"], rid)] = j.get("score")
    return out


def _checks(report: Mapping[str, Any]) -> dict[tuple[str, str], bool | None]:
    return {
        (idea["id"], c["check"]): c.get("passed")
        for idea in report.get("ideas", [])
        for c in idea.get("checks", [])
    }


def compare(
    previous: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    tolerance: float,
    previous_path: str | None = None,
) -> dict[str, Any]:
    """The diff of ``current`` against ``previous``; ``passed`` is False on any regression."""
    if previous is None:
        return {
            "previous": None,
            "tolerance": tolerance,
            "regressions": [],
            "improvements": [],
            "changes": [],
            "passed": True,
            "note": "no earlier comparable report",
        }
    before, after = _scores(previous), _scores(current)
    partial = bool(current.get("partial"))
    regressions: list[dict[str, Any]] = []
    improvements: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    pairs: list[tuple[float, float]] = []
    for key in sorted(set(before) & set(after)):
        old, new = before[key], after[key]
        row = {"idea": key[0], "rubric": key[1], "previous": old, "current": new}
        if old is not None and new is None:
            if not partial:
                regressions.append({**row, "reason": "score missing now"})
            continue
        if old is None or new is None:
            continue
        pairs.append((old, new))
        delta = round(new - old, 3)
        if delta:
            changes.append({**row, "delta": delta})
        if delta < -tolerance:
            regressions.append({**row, "delta": delta, "reason": f"dropped by {-delta:g}"})
        elif delta > tolerance:
            improvements.append({**row, "delta": delta})
    if pairs:
        old_mean = sum(o for o, _ in pairs) / len(pairs)
        new_mean = sum(n for _, n in pairs) / len(pairs)
        if new_mean < old_mean - tolerance:
            regressions.append(
                {
                    "idea": "*",
                    "rubric": "overall",
                    "previous": round(old_mean, 3),
                    "current": round(new_mean, 3),
                    "reason": f"overall mean dropped by {old_mean - new_mean:.2f}",
                }
            )
    old_checks, new_checks = _checks(previous), _checks(current)
    for key in sorted(set(old_checks) & set(new_checks)):
        if old_checks[key] is True and new_checks[key] is False:
            regressions.append(
                {
                    "idea": key[0],
                    "rubric": f"check {key[1]}",
                    "previous": True,
                    "current": False,
                    "reason": "deterministic check now fails",
                }
            )
    return {
        "previous": previous_path,
        "tolerance": tolerance,
        "regressions": regressions,
        "improvements": improvements,
        "changes": changes,
        "passed": not regressions,
        "compared_pairs": len(pairs),
    }


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def render_summary(report: Mapping[str, Any]) -> str:
    """The report as the Markdown of ``summary.md``, for people."""
    cfg = report["config"]
    ideas = report["ideas"]
    rubrics = [r["id"] for r in report["rubrics"]]
    lines = [
        f"# Agent evaluation {report['run_id']}",
        "",
        f"- provider: **{cfg['provider']}** ({cfg['mode']}), judge model "
        f"`{cfg['models']['reasoning']}`, K={cfg['k']}, "
        f"deterministic={_fmt(cfg['deterministic'])}",
        f"- ideas: {', '.join(i['id'] for i in ideas) or '–'}; wall time "
        f"**{report['totals']['wall_ms'] / 1000:.1f} s**; overall score "
        f"**{_fmt(report.get('overall'))}** / 5",
    ]
    if report.get("partial"):
        lines.append(f"- **partial report**: {report.get('stopped_reason')}")
    for note in report.get("notes", []):
        lines.append(f"- note: {note}")
    lines += ["", "## Scores (idea × rubric; score [agreement])", ""]
    lines.append("| rubric | " + " | ".join(i["id"] for i in ideas) + " |")
    lines.append("|---|" + "---|" * len(ideas))
    for rid in rubrics:
        cells = []
        for idea in ideas:
            j = (idea.get("judgements") or {}).get(rid)
            if not j:
                cells.append("–")
                continue
            tag = {"rule": " (rule)", "failed": " (judge failed)", "skipped": " (skipped)"}.get(
                j["source"], ""
            )
            agree = f" [{_fmt(j.get('agreement'))}]" if j.get("agreement") is not None else ""
            cells.append(f"{_fmt(j.get('score'))}{agree}{tag}")
        lines.append(f"| {rid} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Runs",
        "",
        "| idea | pipeline | calls | tokens in/out | cost (est.) | wall s | checks passed |",
        "|---|---|---|---|---|---|---|",
    ]
    for idea in ideas:
        u, p, cs = idea["usage"], idea["pipeline"], idea["checks_summary"]
        lines.append(
            f"| {idea['id']} | {p['status']}{' (reused)' if p.get('reused') else ''} | "
            f"{u['calls']} | {u['input_tokens']}/{u['output_tokens']} | "
            f"{_fmt(u.get('cost_usd'), 4)} | {u['wall_ms'] / 1000:.1f} | "
            f"{cs['passed']}/{cs['passed'] + cs['failed']} |"
        )
    t = report["totals"]
    lines.append(
        f"| **total** | | {t['calls']} (+{t['cached']} cached) | "
        f"{t['input_tokens']}/{t['output_tokens']} | {_fmt(t.get('cost_usd'), 4)} | "
        f"{t['wall_ms'] / 1000:.1f} | |"
    )
    failing = [(i["id"], c) for i in ideas for c in i["checks"] if c["passed"] is False]
    if failing:
        lines += ["", "## Failed deterministic checks", ""]
        lines += [
            f"- {iid}: {c['check']} expected {c['expected']}, got {c['actual']}"
            for iid, c in failing
        ]
    errors = [(i["id"], i["pipeline"]["error"]) for i in ideas if i["pipeline"].get("error")]
    if errors:
        lines += ["", "## Pipeline errors", ""] + [f"- {iid}: {err}" for iid, err in errors]
    lines += [
        "",
        "## State divergence (cosine similarity to the idea; ADR target > 0.60 at stage 10)",
        "",
        "| idea | stage 1 | stage 5 | stage 10 | target met |",
        "|---|---|---|---|---|",
    ]
    for idea in ideas:
        d = idea["divergence"]
        kp = d.get("key_points") or {}
        lines.append(
            f"| {idea['id']} | {_fmt(kp.get(idea_analysis.SPEC.slug))} | "
            f"{_fmt(kp.get(mvp_scope.SPEC.slug))} | {_fmt(kp.get(story_generation.SPEC.slug))} | "
            f"{_fmt(d.get('target_met'))}{' – ' + d['note'] if d.get('note') else ''} |"
        )
    chaos = [(i["id"], row) for i in ideas for row in (i.get("chaos") or {}).get("summary", [])]
    if chaos:
        lines += [
            "",
            "## Chaos propagation (share of later stages the injected error reached)",
            "",
            "| idea | injection | verifiers off | verifiers on | reduction |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {iid} | {r['injection']} | {_fmt(r['rate_off'])} | {_fmt(r['rate_on'])} | "
            f"{_fmt(r['reduction'])} |"
            for iid, r in chaos
        ]
    cal = report.get("calibration") or {}
    if cal.get("validators"):
        lines += [
            "",
            f"## Validator calibration (judge issues: {cal['judge_issues']}, missed by "
            f"every validator: {cal['misses']})",
            "",
            "| validator | flags | TP | FP | FP rate | may block (<20%) |",
            "|---|---|---|---|---|---|",
        ]
        for name, row in cal["validators"].items():
            lines.append(
                f"| {name} | {row['flags']} | {_fmt(row['tp'])} | {_fmt(row['fp'])} | "
                f"{_fmt(row['fp_rate'])} | {_fmt(row['may_block'])} |"
            )
    comp = report["comparison"]
    lines += ["", "## Compared with the previous report", ""]
    if comp.get("previous") is None:
        lines.append(f"- {comp.get('note', 'no earlier comparable report')}")
    else:
        lines.append(
            f"- previous: `{comp['previous']}`; tolerance {comp['tolerance']}; "
            f"{'**no regression**' if comp['passed'] else '**REGRESSION**'}"
        )
        lines += [
            f"- regression: {r['idea']} / {r['rubric']}: {_fmt(r['previous'])} → "
            f"{_fmt(r['current'])} ({r['reason']})"
            for r in comp["regressions"]
        ]
        lines += [
            f"- improved: {r['idea']} / {r['rubric']}: {_fmt(r['previous'])} → {_fmt(r['current'])}"
            for r in comp["improvements"]
        ]
    return "\n".join(lines) + "\n"


def write_report(run_dir: Path, report: Mapping[str, Any]) -> None:
    """Write ``report.json`` and ``summary.md`` into the run folder, each atomically."""
    atomic_write(run_dir / REPORT, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write(run_dir / SUMMARY, render_summary(report))


__all__ = [
    "SCHEMA",
    "compare",
    "find_previous",
    "list_reports",
    "new_run_dir",
    "read_report",
    "render_summary",
    "write_report",
]
