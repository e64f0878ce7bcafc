"""Stage-by-stage progress of a session, read from its summary (``status()['summary']``), with
an estimate per stage from this machine's past runs (``RunWorker.estimates``)."""

from __future__ import annotations

import re
import time
from collections.abc import Collection
from typing import Any

import pandas as pd
import streamlit as st

from frontend_streamlit.components.safe_text import no_paths
from haytham.runs.progress import Estimate
from haytham.runs.worker import Job, StageProgress
from haytham.schemas.intake import AGENT as INTAKE_AGENT
from haytham.stages import ANCHOR_AGENT, ANCHOR_SOURCE, BY_SLUG, STAGES
from haytham.state import RunStatus

_JSON_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*')
_JSON_ESCAPES = (("\\n", " "), ("\\t", " "), ('\\"', "'"), ("\\\\", "\\"))


def readable_stream(text: str) -> str:
    """The words of a structured answer while a model writes it: field names as words
    (``tldr: …``, ``problem statement: …``), JSON's braces, brackets and quotes left out, so a
    person reads the text and not its markup. Text that is not JSON comes back as it was."""
    out = _JSON_KEY.sub(lambda m: m.group(1).replace("_", " ") + ": ", text)
    for escape, plain in _JSON_ESCAPES:
        out = out.replace(escape, plain)
    out = re.sub(r'[{}\[\]"]', " ", out)
    out = re.sub(r"\s+([,:])", r"\1", out)
    return " ".join(out.split())


STAGE_COUNT = f"{len(STAGES)} stages + the concept anchor"
"""How every page counts the pipeline's steps (the anchor is extracted between two stages)."""

# one plain symbol per state, all in DejaVu Sans (no emoji font needed); no two states share one
STATES = {
    "completed": ("✓", "completed"),
    "needs_attention": ("⚠", "needs attention"),
    "inherited": ("↳", "inherited"),
    "running": ("▶", "running"),
    "waiting": ("‖", "waiting for you"),
    "failed": ("✗", "failed"),
    "interrupted": ("↯", "interrupted"),
    "pending": ("○", "pending"),
    "passed": ("✔", "passed"),
    "stale": ("◇", "passed before a change: re-check"),
    "inconclusive": ("?", "inconclusive"),
    "off": ("–", "off"),
    "approved": ("☑", "approved"),
    "rejected": ("⊘", "rejected"),
    "rework_requested": ("↺", "rework requested"),
}
DONE = ("completed", "needs_attention", "inherited")
_STATUSES = {s.value for s in RunStatus}


def state_label(status: str, parent: str | None = None) -> str:
    """``✓ completed``, ``↳ inherited from <parent>``, … (the icon, then the words)."""
    icon, words = STATES.get(status, ("", status.replace("_", " ")))
    if status == "inherited" and parent:
        words += f" from {parent}"
    return f"{icon} {words}".strip()


def duration(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``3 min 10 s``, ``1 h 5 min``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s" if whole % 60 else f"{whole // 60} min"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def estimate_text(estimate: Estimate | None) -> str:
    """A step's usual duration from past runs, in words (``~2 min (3 past runs)``)."""
    if estimate is None:
        return "no estimate yet"
    runs = "1 past run" if estimate.runs == 1 else f"{estimate.runs} past runs"
    usual = "under 1 s" if estimate.seconds < 1 else f"~{duration(estimate.seconds)}"
    return f"{usual} ({runs})"


def describe(slug: str) -> tuple[str, str, float] | None:
    """(phase, title, position) of a summary row, or ``None`` for rows that are no step.

    Besides the stages and the anchor, the summary has the phase verifiers (``verify-why``)
    and the receiving-stage input checks (``validate-input:<stage>``); they sort next to the
    stage they check.
    """
    if slug == INTAKE_AGENT:  # before stage 1: is the text an idea?
        return STAGES[0].phase.value, "Intake: reading your idea", 0.25
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
        checked = BY_SLUG.get(slug.split(":", 1)[1])
        if checked is not None:
            return checked.phase.value, f"Input check for {checked.title}", checked.number - 0.5
    return None


def _gate_rows(gates: dict[int | str, Any], waiting_at: int | None) -> list[dict[str, Any]]:
    """One row per gate: waiting (the run waits for you there), or how it was decided."""
    rows = []
    phases = sorted({s.phase for s in STAGES}, key=lambda p: p.gate)
    for phase in phases:
        record = gates.get(str(phase.gate)) or gates.get(phase.gate) or {}
        decided = record.get("status")
        if waiting_at == phase.gate:
            status = "waiting"
        elif decided in ("approved", "rejected", "rework_requested"):
            status = decided
        else:
            status = "pending"
        numbers = [s.number for s in STAGES if s.phase is phase]
        rows.append(
            {
                "phase": phase.value,
                "stage": f"Gate {phase.gate} · your decision",
                "slug": f"gate-{phase.gate}",
                "order": max(numbers) + 0.75,
                "status": state_label(status),
                "elapsed_s": None,
                "estimate": "",
                "model_calls": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "error": "",
            }
        )
    return rows


def stage_rows(
    summary: dict[str, Any],
    job: Job | None = None,
    running: StageProgress | None = None,
    *,
    estimates: dict[str, Estimate] | None = None,
    gates: dict[int | str, Any] | None = None,  # by gate number (a string once read from JSON)
    waiting_at: int | None = None,
    stale: Collection[str] = (),
) -> list[dict[str, Any]]:
    """One row per step (stages, anchor, verifiers, input checks; with ``gates``, the gates) in
    pipeline order: phase, status, elapsed, estimate, model calls, tokens in/out so far. A
    verifier row in ``stale`` (``status()['stale_rows']``) that passed says it passed before a
    change instead of showing a green mark."""
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
        elif status == "passed" and slug in stale:
            status = "stale"
        estimate = (estimates or {}).get(slug)
        rows.append(
            {
                "phase": where[0],
                "stage": where[1],
                "slug": slug,
                "order": where[2],
                "status": state_label(status, row.get("inherited_from")),
                "elapsed_s": round(elapsed, 2) if status not in ("pending", "inherited") else None,
                "estimate": estimate_text(estimate) if estimates is not None else "",
                "model_calls": row.get("model_calls", 0),
                "input_tokens": row.get("input_tokens", 0),
                "output_tokens": row.get("output_tokens", 0),
                "error": no_paths(str(row.get("error") or "")),
            }
        )
    if gates is not None:
        rows += _gate_rows(gates, waiting_at)
    return sorted(rows, key=lambda r: r["order"])


def stage_table(
    summary: dict[str, Any],
    job: Job | None = None,
    running: StageProgress | None = None,
    **kw: Any,
) -> None:
    """The step table of the Run page: :func:`stage_rows` with readable durations, and the
    error and estimate columns only when some row has one."""
    rows = stage_rows(summary, job, running, **kw)
    for row in rows:  # shown as text: nothing for a step that has not run here
        seconds = row["elapsed_s"]
        row["elapsed"] = (
            "" if seconds is None or row["slug"].startswith("gate-") else (duration(seconds))
        )
    frame = pd.DataFrame(rows).drop(columns=["slug", "order", "elapsed_s"])
    frame.insert(3, "elapsed", frame.pop("elapsed"))
    if not frame["error"].astype(bool).any():
        frame = frame.drop(columns=["error"])
    if not frame["estimate"].astype(bool).any():
        frame = frame.drop(columns=["estimate"])
    st.dataframe(
        frame,
        hide_index=True,
        height=35 * (len(frame) + 1) + 3,
        column_config={
            "elapsed": st.column_config.TextColumn("elapsed"),
            "estimate": st.column_config.TextColumn(
                "usual time here", help="Median of this step's runs in other sessions here"
            ),
            "model_calls": st.column_config.NumberColumn("model calls"),
            "input_tokens": st.column_config.NumberColumn("tokens in"),
            "output_tokens": st.column_config.NumberColumn("tokens out"),
        },
    )


def pretty_status(status: str) -> str:
    """``waiting_gate_2`` -> ``waiting at Gate 2``."""
    gate = RunStatus(status).gate if status in _STATUSES else None
    return f"waiting at Gate {gate}" if gate is not None else status.replace("_", " ")


def totals_line(summary: dict[str, Any], *, calling: bool = False) -> str:
    """Model calls and tokens so far; with ``calling``, says that the call in progress is
    counted when it returns (no provider here reports tokens while a call streams)."""
    t = summary.get("totals") or {}
    calls = t.get("model_calls", 0)
    line = (
        f"{calls} model call{'' if calls == 1 else 's'} finished · "
        f"{t.get('input_tokens', 0):,} tokens in · {t.get('output_tokens', 0):,} tokens out · "
        f"{float(t.get('wall_ms', 0)) / 1000:.1f} s in finished steps"
    )
    if calling:
        line += " · the call in progress is counted when it returns"
    return line


def done_count(summary: dict[str, Any]) -> tuple[int, int]:
    """Pipeline stages and the anchor done (inherited ones included), out of all of them;
    checks are not counted."""
    steps = {ANCHOR_AGENT, *BY_SLUG}
    stages = [r for s, r in (summary.get("stages") or {}).items() if s in steps]
    done = sum(1 for r in stages if r.get("status") in DONE)
    return done, len(stages)


def inherited_steps(summary: dict[str, Any]) -> list[str]:
    """The titles of the steps a fork inherited from its parent, in pipeline order."""
    found = [
        where
        for slug, row in (summary.get("stages") or {}).items()
        if row.get("status") == "inherited" and (where := describe(slug)) is not None
    ]
    return [title for _, title, _ in sorted(found, key=lambda w: w[2])]


def progress_bar(
    summary: dict[str, Any],
    running: StageProgress | None = None,
    estimates: dict[str, Estimate] | None = None,
) -> tuple[float, str]:
    """(fraction, text) for ``st.progress``: the steps done, plus the running step's share of
    its estimate (at most 95 % of it, so the bar never claims a step is done), and the running
    step's elapsed time against its estimate, so a long first stage never sits at 0 %."""
    done, total = done_count(summary)
    fraction = done / total if total else 0.0
    text = f"{done} / {total} steps done ({STAGE_COUNT})"
    if running is not None:
        where = describe(running.stage)
        name = where[1] if where else running.stage
        elapsed = running.elapsed()
        estimate = (estimates or {}).get(running.stage)
        if estimate is not None and estimate.seconds > 0:
            share = min(elapsed / estimate.seconds, 0.95)
            if running.stage in BY_SLUG or running.stage == ANCHOR_AGENT:
                fraction = min((done + share) / total, 1.0) if total else 0.0
            text += f" · now: {name}, {duration(elapsed)} of about {duration(estimate.seconds)}" + (
                " (taking longer than usual)" if elapsed > estimate.seconds else ""
            )
        else:
            text += (
                f" · now: {name}, {duration(elapsed)} so far (no estimate yet: no run of this "
                "step has finished on this machine with this provider)"
            )
    return fraction, text
