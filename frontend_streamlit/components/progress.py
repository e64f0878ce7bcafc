"""Stage-by-stage progress of a session, read from its summary (``status()['summary']``)."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import streamlit as st
from components.safe_text import no_paths

from haytham.pipeline.state import RunStatus
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, BY_SLUG, STAGES
from haytham.worker import Job, StageProgress

ICONS = {
    "completed": "✓",
    "needs_attention": "⚠",
    "running": "▶",
    "failed": "✗",
    "interrupted": "‖",
    "pending": "·",
    "passed": "✓",
    "inconclusive": "?",
    "off": "·",
}  # plain symbols: no emoji font needed
_STATUSES = {s.value for s in RunStatus}


def describe(slug: str) -> tuple[str, str, float] | None:
    """(phase, title, position) of a summary row, or ``None`` for rows that are no step.

    Besides the stages and the anchor, the summary has the phase verifiers (``verify-why``)
    and the receiving-stage input checks (``validate-input:<stage>``); they sort next to the
    stage they check.
    """
    if slug == ANCHOR_AGENT:  # right after the stage it is extracted from
        return ANCHOR_SOURCE.phase.value, "Concept anchor", ANCHOR_SOURCE.number + 0.5
    if slug in BY_SLUG:
        spec = BY_SLUG[slug]
        return spec.phase.value, spec.title, float(spec.number)
    if slug.startswith("verify-"):
        phase = slug.removeprefix("verify-").upper()
        numbers = [s.number for s in STAGES if s.phase.value == phase]
        if numbers:
            return phase, f"Verifier ({phase})", max(numbers) + 0.5
    if slug.startswith("validate-input:"):
        spec = BY_SLUG.get(slug.split(":", 1)[1])
        if spec is not None:
            return spec.phase.value, f"Input check for {spec.title}", spec.number - 0.5
    return None


def stage_rows(
    summary: dict[str, Any], job: Job | None = None, running: StageProgress | None = None
) -> list[dict[str, Any]]:
    """One row per step (stages, anchor, verifiers, input checks) in pipeline order: phase,
    status, elapsed, model calls, tokens in/out."""
    rows = []
    now = time.time()
    for slug, row in (summary.get("stages") or {}).items():
        where = describe(slug)
        if where is None:
            continue
        status = row.get("status") or "pending"
        elapsed = float(row.get("wall_ms") or 0) / 1000
        if running is not None and slug == running.stage:
            status, elapsed = "running", running.elapsed(now)
        elif status == "interrupted" and job is not None and job.alive:
            status = "pending"
        rows.append(
            {
                "phase": where[0],
                "stage": where[1],
                "slug": slug,
                "order": where[2],
                "status": f"{ICONS.get(status, '')} {status}".strip(),
                "elapsed_s": round(elapsed, 2),
                "model_calls": row.get("model_calls", 0),
                "input_tokens": row.get("input_tokens", 0),
                "output_tokens": row.get("output_tokens", 0),
                "error": no_paths(str(row.get("error") or "")),
            }
        )
    return sorted(rows, key=lambda r: r["order"])


def stage_table(
    summary: dict[str, Any], job: Job | None = None, running: StageProgress | None = None
) -> None:
    rows = stage_rows(summary, job, running)
    frame = pd.DataFrame(rows).drop(columns=["slug", "order"])
    if not frame["error"].astype(bool).any():
        frame = frame.drop(columns=["error"])
    st.dataframe(
        frame,
        hide_index=True,
        height=35 * (len(frame) + 1) + 3,
        column_config={
            "elapsed_s": st.column_config.NumberColumn("elapsed (s)", format="%.2f"),
            "model_calls": st.column_config.NumberColumn("model calls"),
            "input_tokens": st.column_config.NumberColumn("tokens in"),
            "output_tokens": st.column_config.NumberColumn("tokens out"),
        },
    )


def pretty_status(status: str) -> str:
    """``waiting_gate_2`` -> ``waiting at Gate 2``."""
    gate = RunStatus(status).gate if status in _STATUSES else None
    return f"waiting at Gate {gate}" if gate is not None else status.replace("_", " ")


def totals_line(summary: dict[str, Any]) -> str:
    t = summary.get("totals") or {}
    return (
        f"{t.get('model_calls', 0)} model calls · {t.get('input_tokens', 0):,} tokens in · "
        f"{t.get('output_tokens', 0):,} tokens out · {float(t.get('wall_ms', 0)) / 1000:.1f} s "
        "in stages"
    )


def done_count(summary: dict[str, Any]) -> tuple[int, int]:
    """Pipeline stages (and the anchor) done, out of all of them; checks are not counted."""
    steps = {ANCHOR_AGENT, *BY_SLUG}
    stages = [r for s, r in (summary.get("stages") or {}).items() if s in steps]
    done = sum(1 for r in stages if r.get("status") in ("completed", "needs_attention"))
    return done, len(stages)
