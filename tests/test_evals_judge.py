"""Judge agents over replayed turns: replicas, early exit, referee, failures, rules, cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline_helpers import replay_settings

from haytham.evals.budget import Budget, Meter
from haytham.evals.cache import JudgeCache
from haytham.evals.judge import Judge, JudgeOptions, apply_determinism
from haytham.evals.rubrics import load_rubrics
from haytham.models.factory import ModelRuntime
from haytham.models.local import DEFAULT_PARAMS, LocalModel

STATE: dict[str, Any] = {
    "idea": "A psychologist's Power of 8 circles (Lynne McTaggart).",
    "anchor": {"intent": {"goal": "g"}},
    "anchor_text": "CONCEPT ANCHOR\nGoal: circles of eight",
    "outputs": {
        "mvp-scope": {
            "tldr": "Live circles of eight.",
            "content": "## Scope",
            "payload": {
                "the_one_thing": "a live circle",
                "appetite": "small",
                "in_scope": [],
                "out_of_scope": [],
            },
        }
    },
}


def line(
    rubric: str,
    label: str,
    score: int,
    issues: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "agent": f"judge-{rubric}",
        "turn": 1,
        "when": [label],
        "response": [
            {
                "tool": "Score",
                "input": {"score": score, "rationale": f"score {score}", "issues": issues or []},
            }
        ],
    }


def make_judge(
    tmp_path: Path,
    lines: list[dict[str, Any]],
    *,
    k: int = 2,
    cache: JudgeCache | None = None,
    budget: Budget | None = None,
) -> tuple[Judge, Meter]:
    cassette = tmp_path / "judges.jsonl"
    cassette.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    settings = replay_settings(tmp_path, cassette, max_retries=0)
    meter = Meter(budget)
    judge = Judge(settings, ModelRuntime(settings), meter, JudgeOptions(k=k), cache)
    return judge, meter


def rubric(rid: str) -> Any:
    return load_rubrics(ids=[rid])[0]


def test_agreeing_replicas_exit_early(tmp_path: Path) -> None:
    judge, meter = make_judge(
        tmp_path,
        [line("stage-mvp-scope", "Replica 1", 5), line("stage-mvp-scope", "Replica 2", 4)],
        k=4,
    )
    j = judge.judge(rubric("stage-mvp-scope"), STATE)
    assert (j.source, j.score, j.median, j.agreement) == ("judge", 4.5, 4.5, 0.75)
    assert j.early_exit and len(j.replicas) == 2 and j.referee is None
    assert meter.calls == 2 and meter.tokens > 0


def test_disagreement_calls_the_referee(tmp_path: Path) -> None:
    issue = {"stage": "mvp-scope", "invariant": "group_structure", "detail": "groups are out"}
    judge, meter = make_judge(
        tmp_path,
        [
            line("stage-mvp-scope", "Replica 1", 5),
            line("stage-mvp-scope", "Replica 2", 2, [issue]),
            line("stage-mvp-scope", "Referee", 3, [issue]),
        ],
    )
    j = judge.judge(rubric("stage-mvp-scope"), STATE)
    assert j.referee is not None and j.referee.score == 3
    assert j.score == 3 and j.agreement == 0.25 and not j.early_exit
    assert [i.invariant for i in j.issues] == ["group_structure"]  # merged, de-duplicated
    assert meter.calls == 3


def test_missing_output_scores_one_by_rule_without_calls(tmp_path: Path) -> None:
    judge, meter = make_judge(tmp_path, [])
    for rid in ("concept-fidelity", "stage-story-generation"):
        j = judge.judge(rubric(rid), STATE)
        assert (j.source, j.score) == ("rule", 1.0) and "Score 1 by rule" in j.rationale
    assert meter.calls == 0


def test_failed_replicas_are_reported_not_raised(tmp_path: Path) -> None:
    judge, _ = make_judge(tmp_path, [line("anchor-quality", "Replica 9", 5)])
    j = judge.judge(rubric("anchor-quality"), STATE)
    assert j.source == "failed" and j.score is None
    assert all("CassetteMiss" in (r.error or "") for r in j.replicas)


def test_budget_stops_before_calls(tmp_path: Path) -> None:
    judge, meter = make_judge(
        tmp_path, [line("stage-mvp-scope", "Replica 1", 5)], budget=Budget(tokens=0)
    )
    j = judge.judge(rubric("stage-mvp-scope"), STATE)
    assert j.source == "skipped" and meter.calls == 0


def test_cache_answers_reruns_for_free(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache")
    lines = [line("stage-mvp-scope", "Replica 1", 4), line("stage-mvp-scope", "Replica 2", 4)]
    judge, meter = make_judge(tmp_path, lines, cache=cache)
    first = judge.judge(rubric("stage-mvp-scope"), STATE)
    assert meter.calls == 2 and len(list((tmp_path / "cache").glob("*.json"))) == 2
    assert all(p.name.startswith("stage-mvp-scope.v1.") for p in (tmp_path / "cache").iterdir())
    again, meter2 = make_judge(tmp_path, [], cache=cache)  # no cassette lines at all
    second = again.judge(rubric("stage-mvp-scope"), STATE)
    assert second.score == first.score and meter2.calls == 0 and meter2.cached == 2
    assert all(r.cached for r in second.replicas)


def test_deterministic_settings_merge_into_local_params() -> None:
    model = LocalModel(lambda: "http://127.0.0.1:1", model_id="m")
    note = apply_determinism(model, "local", "m", 42)
    params = model.get_config()["params"]
    assert params["temperature"] == 0.0 and params["seed"] == 42
    assert params["max_tokens"] == DEFAULT_PARAMS["max_tokens"] and params["stop"]  # kept
    assert "temperature=0.0" in note and "seed=42" in note
    assert "replayed" in apply_determinism(model, "replay", "replay", 1)
