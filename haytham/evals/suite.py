"""The suite: ideas × (pipeline, deterministic checks, judges, analysis, chaos) → one report.

One :class:`SuiteConfig` per run; all per-run state (runtime, meter, cache) is created here and
closed at the end — nothing lives at module level. Judges and pipeline may use different
settings (``pipeline_settings``), which is how ``--pipeline-replay`` judges recorded outputs
with a live judge model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haytham.app import PostValidation, make_service
from haytham.config import TIERS, VALIDATOR_NAMES, Settings
from haytham.evals import calibration as cal
from haytham.evals.aggregate import mean_or_none
from haytham.evals.budget import Budget, Meter, cost_usd
from haytham.evals.cache import JudgeCache
from haytham.evals.chaos import ChaosResult, ChaosSpec
from haytham.evals.chaos import summarize as chaos_summary
from haytham.evals.divergence import Encoder, analyse_session, make_embedder
from haytham.evals.ideas import (
    DEFAULT_IDEAS_FILE,
    EvalIdea,
    check_expected,
    checks_summary,
    load_ideas,
)
from haytham.evals.judge import Judge, Judgement, JudgeOptions
from haytham.evals.pipeline import (
    prompts_digest,
    reuse_session,
    run_chaos,
    run_idea,
    session_id_for,
)
from haytham.evals.report import (
    SCHEMA,
    compare,
    find_previous,
    new_run_dir,
    read_report,
    write_report,
)
from haytham.evals.rubrics import load_rubrics
from haytham.models.factory import ModelRuntime
from haytham.runs.service import Haytham


@dataclass(frozen=True)
class SuiteConfig:
    """One suite run as ``haytham eval`` asked for it: settings (judge, and pipeline when they
    differ), ideas, rubrics, replicas, budget, chaos injections and where reports go."""

    settings: Settings
    reports_dir: Path
    pipeline_settings: Settings | None = None
    mode: str = "live"  # live | replay | record | judge-only
    ideas: tuple[str, ...] | None = None
    rubrics: tuple[str, ...] | None = None
    ideas_file: Path = DEFAULT_IDEAS_FILE
    k: int = 2
    agree_within: float = 1.0
    referee: bool = True
    deterministic: bool = False
    budget: Budget = field(default_factory=Budget)
    tolerance: float = 0.5
    chaos: tuple[ChaosSpec, ...] = ()
    embeddings: bool = True
    record_dir: Path | None = None
    baseline: Path | None = None
    cache: bool = True
    notes: tuple[str, ...] = ()

    @property
    def pipe(self) -> Settings:
        """The pipeline's settings (the judge's, unless the pipeline has its own)."""
        return self.pipeline_settings or self.settings

    def comparable(self) -> str:
        """The providers and model ids of pipeline and judge: only reports with the same key
        are compared for regressions."""
        ids = ",".join(self.settings.model_id(t) for t in TIERS)
        pipe = ",".join(self.pipe.model_id(t) for t in TIERS)
        return f"pipeline={self.pipe.provider}:{pipe}|judge={self.settings.provider}:{ids}"


Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


class _Suite:
    def __init__(
        self, config: SuiteConfig, run_dir: Path, embedder: Encoder | None, log: Log
    ) -> None:
        self.c = config
        # one lazily loading embedder for the whole run (the model loads on first use)
        self.embedder = embedder or (make_embedder() if config.embeddings else None)
        self.log = log
        self.meter = Meter(config.budget)
        self.runtime = ModelRuntime(config.pipe)
        self.judge_runtime = (
            self.runtime if config.pipeline_settings is None else ModelRuntime(config.settings)
        )
        self.sessions = run_dir / "sessions"  # each report keeps the sessions it judged
        use_cache = config.cache and config.deterministic and config.mode == "live"
        self.cache = JudgeCache(config.reports_dir / ".cache" / "judgements") if use_cache else None
        self.reuse = use_cache
        self.stopped: str | None = None
        self.verifiers = "off"
        self.determinism = ""

    def close(self) -> None:
        self.runtime.close()
        if self.judge_runtime is not self.runtime:
            self.judge_runtime.close()

    def _settings_for(self, base: Settings, idea: EvalIdea) -> Settings:
        update: dict[str, Any] = {"sessions_dir": self.sessions}
        if self.c.record_dir is not None:
            update["record_to"] = self.c.record_dir / f"{idea.id}.jsonl"
        return base.model_copy(update=update)

    def _services(self, pipe: Settings) -> tuple[Haytham, Haytham]:
        """(as the product runs, verifiers off): one runtime and one embedding model."""
        validation = PostValidation(pipe.validators)

        def make(verifiers: bool) -> Haytham:
            return make_service(
                pipe,
                models=self.runtime,
                tracking=False,
                verifiers=verifiers,
                validation=validation,
            )

        self.verifiers = "on"
        return make(True), make(False)

    def run_idea(self, idea: EvalIdea, rubrics: list[Any]) -> dict[str, Any]:
        started, before = time.perf_counter(), self.meter.snapshot()
        pipe = self._settings_for(self.c.pipe, idea)
        jsettings = self._settings_for(self.c.settings, idea)
        svc, svc_off = self._services(pipe)
        self.log(f"[{idea.id}] pipeline ({pipe.provider})")
        sid = session_id_for(idea.id, idea.text, pipe)
        if self.reuse:
            reuse_session(self.c.reports_dir, sid, self.sessions)
        clean = run_idea(svc, idea.id, idea.text, sid, self.meter, reuse=self.reuse)
        if clean.status in ("partial", "skipped"):
            self.stopped = self.stopped or clean.error
        if clean.error:
            self.log(f"[{idea.id}] pipeline {clean.status}: {clean.error}")
        pipeline_tokens = (clean.input_tokens, clean.output_tokens, clean.calls)
        checks = check_expected(idea, clean.state)
        judge = Judge(
            jsettings,
            self.judge_runtime,
            self.meter,
            JudgeOptions(
                k=self.c.k,
                agree_within=self.c.agree_within,
                referee=self.c.referee,
                deterministic=self.c.deterministic,
            ),
            self.cache,
        )
        judgements: dict[str, Judgement] = {}
        for rubric in rubrics:
            why = self.meter.exhausted()
            if why:
                self.stopped = self.stopped or why
                break
            j = judge.judge(rubric, clean.state)
            judgements[rubric.id] = j
            self.log(
                f"[{idea.id}] {rubric.id}: {j.score if j.score is not None else '–'} ({j.source})"
            )
        self.determinism = judge.determinism_note or self.determinism
        findings: list[dict[str, Any]] = []
        divergence: dict[str, Any] = {"note": "no session to analyse", "key_points": {}}
        if clean.session_dir.is_dir() and clean.state:
            findings, divergence = analyse_session(
                clean.session_dir,
                embeddings=self.c.embeddings,
                embedder=self.embedder,
                validators=self.c.settings.validators,
            )
        flags = findings + cal.verifier_flags(clean.state)
        calibration = cal.calibrate(cal.judge_issues(judgements.values()), flags, VALIDATOR_NAMES)
        chaos = self._chaos(idea, clean, svc_off, svc) if clean.status == "done" else []
        pipeline_tokens = (
            pipeline_tokens[0] + sum(r.input_tokens for r in chaos),
            pipeline_tokens[1] + sum(r.output_tokens for r in chaos),
            pipeline_tokens[2] + sum(r.calls for r in chaos),
        )
        after = self.meter.snapshot()
        calls = int(after["calls"] - before["calls"])
        tin = int(after["input_tokens"] - before["input_tokens"])
        tout = int(after["output_tokens"] - before["output_tokens"])
        cost = _cost(
            pipe, jsettings, pipeline_tokens, (tin - pipeline_tokens[0], tout - pipeline_tokens[1])
        )
        scores = [j.score for j in judgements.values()]
        svc.close()
        svc_off.close()
        return {
            "id": idea.id,
            "title": idea.title,
            "class": idea.cls,
            "pipeline": clean.public(),
            "checks": [c.model_dump(mode="json") for c in checks],
            "checks_summary": checks_summary(checks),
            "judgements": {k: v.model_dump(mode="json") for k, v in judgements.items()},
            "mean_score": mean_or_none(scores),
            "divergence": divergence,
            "findings": findings,
            "calibration": calibration,
            "chaos": {
                "runs": [r.model_dump(mode="json") for r in chaos],
                "summary": chaos_summary(chaos),
            },
            "usage": {
                "calls": calls,
                "input_tokens": tin,
                "output_tokens": tout,
                "cached": int(after["cached"] - before["cached"]),
                "cost_usd": cost,
                "wall_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        }

    def _chaos(self, idea: EvalIdea, clean: Any, off: Haytham, on: Haytham) -> list[ChaosResult]:
        prefer = [k for inv in idea.expected.invariants for k in inv.any_of]
        results: list[ChaosResult] = []
        for spec in self.c.chaos:
            for label, svc in (("off", off), ("on", on)):
                self.log(f"[{idea.id}] chaos {spec.label}, verifiers {label}")
                result = run_chaos(svc, clean, spec, label, self.meter, prefer)
                if result.status in ("partial", "skipped"):
                    self.stopped = self.stopped or result.error
                results.append(result)
        return results


def _cost(
    pipe: Settings, judge: Settings, p: tuple[int, int, int], j: tuple[int, int]
) -> float | None:
    a = cost_usd(pipe.provider, pipe.model_id("heavy"), p[0], p[1])
    b = cost_usd(judge.provider, judge.model_id("reasoning"), max(0, j[0]), max(0, j[1]))
    return None if a is None or b is None else round(a + b, 4)


def run_suite(
    config: SuiteConfig, *, embedder: Encoder | None = None, log: Log = _quiet
) -> tuple[Path, dict[str, Any]]:
    """Run the suite and write its report; returns (report folder, report)."""
    ideas = load_ideas(config.ideas_file, list(config.ideas) if config.ideas else None)
    rubrics = load_rubrics(ids=list(config.rubrics) if config.rubrics else None)
    run_dir = new_run_dir(config.reports_dir)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    suite = _Suite(config, run_dir, embedder, log)
    rows: list[dict[str, Any]] = []
    try:
        for idea in ideas:
            why = suite.meter.exhausted()
            if why:
                suite.stopped = suite.stopped or why
                break
            rows.append(suite.run_idea(idea, rubrics))
    finally:
        suite.close()
    report = _assemble(config, suite, ideas, rubrics, rows, run_dir, started_at)
    baseline = config.baseline
    previous = (
        baseline
        if baseline is not None
        else find_previous(config.reports_dir, run_dir, config.comparable())
    )
    prev_data = read_report(previous) if previous is not None else None
    report["comparison"] = compare(
        prev_data, report, config.tolerance, str(previous) if prev_data is not None else None
    )
    write_report(run_dir, report)
    return run_dir, report


def _assemble(
    c: SuiteConfig,
    suite: _Suite,
    ideas: list[EvalIdea],
    rubrics: list[Any],
    rows: list[dict[str, Any]],
    run_dir: Path,
    started_at: str,
) -> dict[str, Any]:
    snap = suite.meter.snapshot()
    per_rubric = {
        r.id: mean_or_none([row["judgements"].get(r.id, {}).get("score") for row in rows])
        for r in rubrics
    }
    costs = [row["usage"]["cost_usd"] for row in rows]
    notes = list(c.notes)
    if c.deterministic and c.mode == "replay":
        notes.append(
            "replay: every model turn comes from the cassettes, so the run is deterministic"
        )
    elif c.deterministic:
        notes.append(
            "deterministic: judges sample with "
            + (suite.determinism or "provider defaults")
            + "; pipeline stages keep the provider's sampling, and in live "
            "mode finished sessions and judgements are cached"
        )
    if c.pipe.provider == "local" or c.settings.provider == "local":
        notes.append(
            "the bundled local model (Gemma 3 270M base) is for trying the flow "
            "offline; its scores are expected to be low"
        )
    return {
        "schema": SCHEMA,
        "run_id": run_dir.name,
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "partial": suite.stopped is not None,
        "stopped_reason": suite.stopped,
        "notes": notes,
        "config": {
            "provider": c.settings.provider,
            "pipeline_provider": c.pipe.provider,
            "models": {t: c.settings.model_id(t) for t in TIERS},
            "pipeline_models": {t: c.pipe.model_id(t) for t in TIERS},
            "mode": c.mode,
            "comparable": c.comparable(),
            "replay_dir": str(c.pipe.cassette) if c.pipe.provider == "replay" else None,
            "record_dir": str(c.record_dir) if c.record_dir else None,
            "ideas": [i.id for i in ideas],
            "rubrics": [r.id for r in rubrics],
            "k": c.k,
            "agree_within": c.agree_within,
            "referee": c.referee,
            "deterministic": c.deterministic,
            "determinism": suite.determinism or None,
            "budget": c.budget.describe(),
            "tolerance": c.tolerance,
            "chaos": [s.label for s in c.chaos],
            "embeddings": c.embeddings,
            "verifiers": suite.verifiers,
            "prompts_digest": prompts_digest()[:16],
        },
        "rubrics": [
            {"id": r.id, "version": r.version, "target": r.target, "digest": r.digest}
            for r in rubrics
        ],
        "ideas": rows,
        "not_run": [i.id for i in ideas[len(rows) :]],
        "scores": per_rubric,
        "overall": mean_or_none([row["mean_score"] for row in rows]),
        "calibration": cal.merge([row["calibration"] for row in rows]),
        "totals": {
            **snap,
            "cost_usd": None if any(x is None for x in costs) else round(sum(costs), 4),
        },
    }


__all__ = ["SuiteConfig", "run_suite"]
