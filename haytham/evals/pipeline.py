"""Runs one test idea through the real pipeline (the service), phase by phase, for the suite.

Gates are auto-approved (ambiguities take their first option, blocking items are overridden with
the reason "auto-approve", exactly as ``haytham run --auto-approve``). The budget is checked
before every phase. A failing stage does not stop the suite: the run is reported as ``failed``
with the error, and the judges score what exists (missing stages score 1 by rule).

Sessions live in the report's own folder (``<run>/sessions``). Their ids are deterministic
(``eval-<idea>-<fingerprint>``), so in deterministic live mode a finished session for the same
idea, provider, models and prompts is copied from an earlier report and reused: a rerun costs
nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haytham.config import TIERS, Settings
from haytham.errors import HaythamError
from haytham.evals.budget import Meter
from haytham.evals.chaos import ChaosResult, ChaosSpec, inject, measure, rewrite_state
from haytham.runs.service import Haytham
from haytham.stages.base import PROMPTS_DIR
from haytham.state import RunStatus

PHASE_STOPS: tuple[int | None, ...] = (2, 3, 4, None)  # run to Gate 2, 3, 4, then the end


@dataclass
class PipelineRun:
    """One idea's pipeline session in the suite: its status, cost, time and final state."""

    idea_id: str
    session_id: str
    session_dir: Path
    status: str = "not_run"
    error: str | None = None
    wall_ms: float = 0.0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused: bool = False
    state: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """The run as the report shows it (the state itself left out)."""
        return {
            "session_id": self.session_id,
            "session_dir": str(self.session_dir),
            "status": self.status,
            "error": self.error,
            "wall_ms": self.wall_ms,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reused": self.reused,
        }


def prompts_digest() -> str:
    """sha256 over every prompt file the pipeline reads (stages, anchor, shared, verifiers)."""
    h = hashlib.sha256()
    for path in sorted(PROMPTS_DIR.rglob("*.md")):
        if "rubrics" in path.parts:
            continue
        h.update(str(path.relative_to(PROMPTS_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def session_id_for(idea_id: str, idea_text: str, settings: Settings) -> str:
    """``eval-<idea>-<fingerprint>``: the same idea text, provider, models and prompts give the
    same id, so a finished session can be reused."""
    key = "|".join(
        [idea_text, settings.provider, *(settings.model_id(t) for t in TIERS), prompts_digest()]
    )
    return f"eval-{idea_id}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def reuse_session(reports_dir: Path, session_id: str, into: Path) -> bool:
    """Copy the newest finished ``session_id`` from an earlier report into ``into`` (cache)."""
    if (into / session_id).exists():
        return False
    for run in sorted((p for p in reports_dir.glob("*/sessions") if p.is_dir()), reverse=True):
        source = run / session_id
        try:
            done = json.loads((source / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(done, dict) and done.get("status") == "done":
            shutil.copytree(source, into / session_id)
            return True
    return False


def _totals(svc: Haytham, sid: str) -> dict[str, Any]:
    try:
        return svc.status(sid)["summary"]["totals"]
    except HaythamError:
        return {}


def _advance(svc: Haytham, sid: str, meter: Meter, run: PipelineRun) -> None:
    """Run to the end (phase by phase under a budget); sets status and error on ``run``."""
    limited = meter.budget.tokens is not None or meter.budget.ms is not None
    for stop in PHASE_STOPS if limited else (None,):
        spent = _totals(svc, sid)
        used = int(spent.get("input_tokens", 0)) + int(spent.get("output_tokens", 0))
        why = meter.exhausted(used)
        if why:
            run.status, run.error = "partial", why
            return
        try:
            outcome = svc.run(sid, until=stop, auto_approve=True)
        except HaythamError as exc:
            run.status, run.error = "failed", str(exc)
            return
        if outcome.status in ("done", "rejected"):
            run.status = outcome.status
            return
    run.status = "incomplete"


def _finish(svc: Haytham, run: PipelineRun, meter: Meter | None, started: float) -> PipelineRun:
    totals = _totals(svc, run.session_id)
    run.calls = int(totals.get("model_calls", 0))
    run.input_tokens = int(totals.get("input_tokens", 0))
    run.output_tokens = int(totals.get("output_tokens", 0))
    run.wall_ms = round((time.perf_counter() - started) * 1000, 1)
    try:
        run.state = svc.load_state(run.session_id).dump()  # judges read the session's JSON
    except HaythamError as exc:
        run.state = {}
        run.error = run.error or str(exc)
    if meter is not None and not run.reused:
        meter.add(run.input_tokens, run.output_tokens, run.calls)
    return run


def run_idea(
    svc: Haytham, idea_id: str, idea_text: str, session_id: str, meter: Meter, *, reuse: bool
) -> PipelineRun:
    """The idea's clean pipeline run (or a finished earlier one when ``reuse``)."""
    started = time.perf_counter()
    run = PipelineRun(idea_id, session_id, svc.settings.sessions_dir / session_id)
    if reuse and svc.store.exists(session_id):
        try:
            done = svc.load_state(session_id).status is RunStatus.DONE
        except HaythamError:
            done = False
        if done:
            run.status, run.reused = "done", True
            return _finish(svc, run, None, started)
    if svc.store.exists(session_id):
        svc.delete_session(session_id)
    why = meter.exhausted()
    if why:
        run.status, run.error = "skipped", why
        return run
    try:
        svc.create_session(idea_text, session_id=session_id, skip_intake=True)
    except HaythamError as exc:
        run.status, run.error = "failed", str(exc)
        return run
    _advance(svc, session_id, meter, run)
    return _finish(svc, run, meter, started)


def run_chaos(
    svc: Haytham,
    clean: PipelineRun,
    spec: ChaosSpec,
    verifiers: str,
    meter: Meter,
    prefer: list[str],
) -> ChaosResult:
    """Fork ``clean`` after the injected stage, inject, run on, and measure propagation."""
    result = ChaosResult(kind=spec.kind, stage=spec.stage, verifiers=verifiers)
    sid = f"{clean.session_id}-chaos-{spec.kind}-{verifiers}"
    result.session_id = sid
    why = meter.exhausted()
    if why:
        result.status, result.error = "skipped", why
        return result
    started = time.perf_counter()
    run = PipelineRun(clean.idea_id, sid, svc.settings.sessions_dir / sid)
    try:
        if svc.store.exists(sid):
            svc.delete_session(sid)
        svc.fork(clean.session_id, spec.fork_stage(), sid)
        files = svc.store.open(sid)
        result.injected = rewrite_state(files, lambda state: inject(state, spec, prefer))
    except HaythamError as exc:
        result.status, result.error = "failed", str(exc)
        return result
    _advance(svc, sid, meter, run)
    _finish(svc, run, meter, started)
    result.status, result.error = run.status, run.error
    result.calls, result.input_tokens, result.output_tokens = (
        run.calls,
        run.input_tokens,
        run.output_tokens,
    )
    measured, reached = measure(spec, result.injected, clean.state, run.state)
    result.measured, result.reached = measured, reached
    result.rate = round(len(reached) / len(measured), 3) if measured else None
    result.verifications = {
        phase: str(v.get("status", ""))
        for phase, v in (run.state.get("verifications") or {}).items()
    }
    return result


__all__ = ["PipelineRun", "prompts_digest", "run_chaos", "run_idea", "session_id_for"]
