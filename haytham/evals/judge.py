"""Judge agents: one rubric, K replicas, early exit, a referee on disagreement, a cache.

Every replica is a fresh Strands agent ``judge-<rubric>`` on the ``reasoning`` tier answering with
the :class:`Score` tool. The user prompt names the replica ("Replica 2", "Referee"), so replicas
are distinct requests (distinct cassette lines and cache entries) and, in deterministic mode, get
distinct fixed seeds. Nothing to judge (the stage never ran) gives score 1 by rule, with no call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from strands import Agent
from strands.models import Model

from haytham.config import Settings
from haytham.evals import aggregate as agg
from haytham.evals.budget import Meter
from haytham.evals.cache import JudgeCache, prompt_hash
from haytham.evals.material import judge_material, missing_reason
from haytham.evals.rubrics import Rubric
from haytham.models.factory import ModelRuntime, build_model
from haytham.models.providers import PROVIDER_TABLE, ProviderTable
from haytham.schemas.base import TolerantModel

JUDGE_TIER = "reasoning"
REPAIR_TURNS = 2  # the first answer plus one repair request, as for the stages
DETERMINISTIC_TEMPERATURE = 0.0


class JudgeIssue(TolerantModel):
    """One problem a judge names: where it is and what it is, in one sentence."""

    stage: str = Field(default="", description="Slug of the stage where the problem is, or empty.")
    invariant: str = Field(default="", description="Anchor invariant property concerned, or empty.")
    detail: str = Field(min_length=1, description="One sentence.")


class Score(TolerantModel):
    """A judge's answer for one rubric."""

    score: int = Field(ge=1, le=5, description="1 (worst) to 5 (best), per the rubric's table.")
    rationale: str = Field(min_length=1, description="Why this score, with short quotes.")
    issues: list[JudgeIssue] = Field(default_factory=list, max_length=8)


class ReplicaVerdict(BaseModel):
    """One judge replica's answer for one rubric (or why it gave none)."""

    label: str
    score: int | None = None
    rationale: str = ""
    issues: list[JudgeIssue] = Field(default_factory=list)
    error: str | None = None
    cached: bool = False
    wall_ms: float = 0.0


class Judgement(BaseModel):
    """The aggregated verdict of one rubric on one idea's outputs."""

    rubric: str
    version: int
    digest: str
    target: str
    source: Literal["judge", "rule", "failed", "skipped"]
    score: float | None = None
    median: float | None = None
    agreement: float | None = None
    band: list[float] | None = None
    replicas: list[ReplicaVerdict] = Field(default_factory=list)
    referee: ReplicaVerdict | None = None
    early_exit: bool = False
    rationale: str = ""
    issues: list[JudgeIssue] = Field(default_factory=list)


@dataclass(frozen=True)
class JudgeOptions:
    """How a rubric is judged: replicas, how close they must agree, and whether a referee settles
    a split."""

    k: int = 2
    agree_within: float = 1.0
    referee: bool = True
    deterministic: bool = False
    seed: int = 20260201


def apply_determinism(
    model: Model,
    provider: str,
    model_id: str,
    seed: int,
    providers: ProviderTable = PROVIDER_TABLE,
) -> str:
    """Set temperature <= 0.1 and a fixed seed where the provider supports them (its spec's
    ``sampling``); say which."""
    spec = providers[provider]
    if spec.deterministic:
        return "replayed turns (deterministic by construction)"
    try:
        notes = spec.sampling(model, model_id, DETERMINISTIC_TEMPERATURE, seed)
    except Exception as exc:  # noqa: BLE001 - a provider refusing config must not stop the suite
        notes = [f"could not set sampling ({type(exc).__name__})"]
    return ", ".join(notes)


def prompt_for(
    rubric: Rubric, material: str, label: str, earlier: list[ReplicaVerdict] | None = None
) -> str:
    """The judge's prompt: the rubric, the material it judges, and earlier replicas' verdicts if
    any."""
    head = (
        f"# Evaluation: {rubric.title} (rubric {rubric.id} v{rubric.version})\n"
        f"{label}. Judge independently; answer with the Score tool.\n"
    )
    text = head + "\n" + material
    if earlier:
        lines = ["", "## Earlier independent judgements (they disagree)"]
        for n, v in enumerate((v for v in earlier if v.score is not None), 1):
            lines.append(f"- Judge {n}: score {v.score}. {v.rationale}")
        lines.append(
            "As referee, read the material yourself and give the score the rubric's "
            "table supports; do not average."
        )
        text += "\n".join(lines) + "\n"
    return text


class Judge:
    """Runs rubrics over pipeline states; one per suite run (shares the runtime and meter)."""

    def __init__(
        self,
        settings: Settings,
        runtime: ModelRuntime,
        meter: Meter,
        options: JudgeOptions,
        cache: JudgeCache | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.meter = meter
        self.options = options
        self.cache = cache
        self.determinism_note = ""

    def judge(self, rubric: Rubric, state: Mapping[str, Any]) -> Judgement:
        """Judge ``state`` (a finished session's outputs) against ``rubric``: replicas, then a
        referee when they disagree."""
        base = {
            "rubric": rubric.id,
            "version": rubric.version,
            "digest": rubric.digest,
            "target": rubric.target,
        }
        missing = missing_reason(rubric, state)
        if missing:
            return Judgement(
                **base,
                source="rule",
                score=1.0,
                median=1.0,
                band=[1.0, 1.0],
                rationale=f"Score 1 by rule: {missing}.",
            )
        material = judge_material(rubric, state)
        opts = self.options
        replicas: list[ReplicaVerdict] = []
        referee: ReplicaVerdict | None = None
        while True:
            scores = [float(r.score) for r in replicas if r.score is not None]
            step = agg.next_step(
                scores, len(replicas), opts.k, opts.agree_within, referee is not None, opts.referee
            )
            if step == "done":
                break
            if self.meter.exhausted():
                break
            if step == "replica":
                n = len(replicas) + 1
                replicas.append(
                    self._ask(
                        rubric, prompt_for(rubric, material, f"Replica {n}"), f"replica {n}", n
                    )
                )
            else:
                referee = self._ask(
                    rubric, prompt_for(rubric, material, "Referee", replicas), "referee", 0
                )
        scores = [float(r.score) for r in replicas if r.score is not None]
        ref_score = float(referee.score) if referee and referee.score is not None else None
        result = agg.aggregate(scores, ref_score)
        ok = [r for r in [*replicas, *([referee] if referee else [])] if r.score is not None]
        if result["score"] is None:
            errors = "; ".join(sorted({r.error or "no answer" for r in replicas})) or "not run"
            source = "skipped" if not replicas else "failed"
            return Judgement(
                **base,
                source=source,
                replicas=replicas,
                referee=referee,
                rationale=f"No score: {errors}",
            )
        best = min(ok, key=lambda r: abs((r.score or 0) - result["score"]))
        return Judgement(
            **base,
            source="judge",
            score=result["score"],
            median=result["median"],
            agreement=result["agreement"],
            band=result["band"],
            replicas=replicas,
            referee=referee,
            early_exit=len(replicas) < opts.k,
            rationale=best.rationale,
            issues=_merge_issues(ok),
        )

    def _ask(self, rubric: Rubric, prompt: str, label: str, replica: int) -> ReplicaVerdict:
        started = time.perf_counter()
        seed = self.options.seed + replica
        model_id = self.settings.model_id(JUDGE_TIER)
        key = None
        if self.cache is not None:
            digest = prompt_hash(
                {
                    "provider": self.settings.provider,
                    "model": model_id,
                    "seed": seed,
                    "temperature": DETERMINISTIC_TEMPERATURE,
                    "system": rubric.system_prompt,
                    "prompt": prompt,
                }
            )
            key = JudgeCache.key(rubric.id, rubric.version, digest)
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    score = Score.model_validate(hit)
                except ValueError:
                    score = None
                if score is not None:
                    self.meter.cache_hit()
                    return ReplicaVerdict(
                        label=label,
                        score=score.score,
                        rationale=score.rationale,
                        issues=score.issues,
                        cached=True,
                    )
        try:
            model = build_model(
                self.settings,
                JUDGE_TIER,
                rubric.agent,
                on_call=self.meter.on_call,
                runtime=self.runtime,
            )
            if self.options.deterministic:
                self.determinism_note = apply_determinism(
                    model, self.settings.provider, model_id, seed, self.settings.providers
                )
            agent = Agent(
                model=model,
                system_prompt=rubric.system_prompt,
                callback_handler=None,
                retry_strategy=None,
                name=rubric.agent,
            )
            result = agent(prompt, structured_output_model=Score, limits={"turns": REPAIR_TURNS})
            answer = result.structured_output
            if not isinstance(answer, Score):
                raise ValueError("the judge gave no Score")
            score = answer
        except Exception as exc:  # noqa: BLE001 - a failed replica is reported, never fatal
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            return ReplicaVerdict(
                label=label, error=f"{type(exc).__name__}: {message}", wall_ms=_ms(started)
            )
        if self.cache is not None and key is not None:
            self.cache.put(key, score.model_dump(mode="json"))
        return ReplicaVerdict(
            label=label,
            score=score.score,
            rationale=score.rationale,
            issues=score.issues,
            wall_ms=_ms(started),
        )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _merge_issues(verdicts: list[ReplicaVerdict]) -> list[JudgeIssue]:
    seen: dict[tuple[str, str, str], JudgeIssue] = {}
    for v in verdicts:
        for issue in v.issues:
            key = (
                issue.stage.strip().lower(),
                issue.invariant.strip().lower(),
                " ".join(issue.detail.lower().split()),
            )
            seen.setdefault(key, issue)
    return list(seen.values())


__all__ = [
    "Judge",
    "JudgeIssue",
    "JudgeOptions",
    "Judgement",
    "ReplicaVerdict",
    "Score",
    "apply_determinism",
    "prompt_for",
]
