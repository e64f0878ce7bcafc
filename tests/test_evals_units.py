"""Evals building blocks: aggregation policy, budgets, rubrics, ideas, chaos, calibration, diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from haytham.errors import ConfigError, InputError
from haytham.evals import aggregate as agg
from haytham.evals.budget import Budget, Meter, cost_usd
from haytham.evals.calibration import calibrate, matches, merge
from haytham.evals.chaos import ChaosResult, ChaosSpec, inject, measure, summarize
from haytham.evals.ideas import check_expected, checks_summary, interface_matches, load_ideas
from haytham.evals.judge import JudgeIssue
from haytham.evals.report import compare, find_previous, render_summary, write_report
from haytham.evals.rubrics import load_rubrics, parse_rubric, stage_rubric_ids
from haytham.stages import STAGES


def _table(rows: tuple[str, ...]) -> str:
    """ADR-022's score table rows (5 down to 1) as markdown."""
    return "\n".join(f"| {5 - n} | {row} |" for n, row in enumerate(rows))


ADR_7A = _table(
    (
        "All anchor invariants preserved. All identity features recognizable in final output. No "
        "silent genericization.",
        "All invariants preserved. Minor genericization of non-critical identity features, flagged "
        "by verifier.",
        "One invariant violated with justification (Invariant Override). Identity features "
        "partially preserved.",
        "One or more invariants silently violated. Core identity features genericized without "
        "flagging.",
        "Final output describes a fundamentally different product than the input idea.",
    )
)
ADR_7B = _table(
    (
        "All explicit constraints captured. Invariants match verifiable statements in input. "
        "Non-goals are reasonable inferences. Identity features are genuinely distinctive.",
        "Constraints captured. One non-goal is debatable but not harmful.",
        "One explicit constraint missed. Or one invariant over-inferred (not clearly in input).",
        "Multiple constraints missed. Or non-goals that contradict user intent.",
        "Anchor describes a different idea than the input.",
    )
)


# -- aggregation ---------------------------------------------------------------------------------
def test_trimmed_mean_median_agreement_band() -> None:
    assert agg.trimmed_mean([4, 5]) == 4.5
    assert agg.trimmed_mean([1, 4, 5]) == 4  # one low and one high dropped
    assert agg.agreement([3, 3]) == 1.0 and agg.agreement([1, 5]) == 0.0
    assert agg.agreement([4]) is None
    result = agg.aggregate([5, 3], referee_score=4)
    assert result["score"] == 4 and result["median"] == 4 and result["agreement"] == 0.5
    low, high = result["band"]
    assert 1 <= low < 4 < high <= 5
    assert agg.aggregate([])["score"] is None


@pytest.mark.parametrize(
    ("scores", "attempted", "k", "referee_done", "expected"),
    [
        ([], 0, 2, False, "replica"),
        ([4.0], 1, 1, False, "done"),  # K=1: one replica, no referee
        ([4.0], 1, 2, False, "replica"),
        ([4.0, 5.0], 2, 2, False, "done"),  # agree within 1
        ([4.0, 5.0], 2, 4, False, "done"),  # early exit before replicas 3 and 4
        ([2.0, 5.0], 2, 3, False, "replica"),  # disagree: run replica 3
        ([2.0, 5.0, 4.0], 3, 3, False, "referee"),
        ([2.0, 5.0], 2, 2, False, "referee"),
        ([2.0, 5.0], 2, 2, True, "done"),  # referee only once
    ],
)
def test_next_step_policy(
    scores: list[float], attempted: int, k: int, referee_done: bool, expected: str
) -> None:
    assert agg.next_step(scores, attempted, k, 1.0, referee_done) == expected


# -- budget ----------------------------------------------------------------------------------------
def test_budget_parse_and_meter() -> None:
    b = Budget.parse("tokens=100,ms=5000")
    assert (b.tokens, b.ms) == (100, 5000) and b.describe() == "tokens=100,ms=5000"
    assert Budget.parse("s=2").ms == 2000 and Budget.parse(None) == Budget()
    with pytest.raises(InputError, match="tokens=N,ms=M"):
        Budget.parse("dollars=3")
    meter = Meter(Budget(tokens=100))
    assert meter.exhausted() is None
    meter.add(60, 30)
    assert meter.exhausted() is None and "token budget" in (meter.exhausted(extra_tokens=20) or "")
    assert Meter(Budget(ms=0)).exhausted().startswith("time budget")
    assert cost_usd("replay", "replay", 10**6, 10**6) == 0.0
    assert cost_usd("anthropic", "claude-sonnet-4-6", 10**6, 10**6) == 18.0
    assert cost_usd("openai", "unknown-model", 1, 1) is None


# -- rubrics ---------------------------------------------------------------------------------------
def test_rubrics_match_adr_and_cover_every_stage() -> None:
    rubrics = load_rubrics()
    ids = [r.id for r in rubrics]
    assert ids[:2] == ["concept-fidelity", "anchor-quality"]
    assert ids[2:] == stage_rubric_ids() and len(ids) == 2 + len(STAGES)
    by_id = {r.id: r for r in rubrics}
    assert ADR_7A in by_id["concept-fidelity"].body
    assert ADR_7B in by_id["anchor-quality"].body
    for r in rubrics:
        assert r.version >= 1 and r.agent == f"judge-{r.id}"
        assert "Score tool" in r.system_prompt  # the shared preamble comes first
        for n in range(1, 6):
            assert f"\n| {n} | " in r.body
    assert [r.stage for r in rubrics[2:]] == [s.slug for s in STAGES]


def test_rubric_parse_errors_name_the_file() -> None:
    with pytest.raises(ConfigError, match="x.md has no front matter"):
        parse_rubric("# no front matter", "x.md")
    with pytest.raises(ConfigError, match="target"):
        parse_rubric("---\nid: a\nversion: 1\ntarget: stage:nope\ntitle: A\n---\nbody", "y.md")
    with pytest.raises(InputError, match="Unknown rubric"):
        load_rubrics(ids=["nope"])


# -- ideas -----------------------------------------------------------------------------------------
def test_ideas_cover_the_input_classes() -> None:
    ideas = load_ideas()
    assert ideas[0].id == "power-of-8" and len(ideas) >= 6
    classes = " ".join(i.cls for i in ideas)
    for cls in (
        "web-app",
        "cli-tool",
        "api-service",
        "marketplace",
        "mobile/social",
        "internal-tool",
    ):
        assert cls in classes
    interfaces = {i.expected.primary_interface for i in ideas}
    assert {"cli", "api", "web", "mobile"} <= interfaces
    assert {i.expected.has_realtime for i in ideas} == {True, False}
    assert {i.expected.has_auth for i in ideas} == {True, False}
    for idea in ideas:
        assert len(idea.text) > 100 and idea.expected.invariants
    md = (Path(__file__).parent / "fixtures" / "ideas" / "power_of_8.md").read_text().strip()
    assert ideas[0].text == md
    with pytest.raises(InputError, match="known: power-of-8"):
        load_ideas(ids=["nope"])


def test_check_expected_against_state() -> None:
    idea = load_ideas(ids=["power-of-8"])[0]
    state = {
        "anchor_text": "Invariants:\n- access_model = closed: only his existing patients\n"
        "- group_structure = 8 per session: 1 receiver + 7 givers",
        "outputs": {
            "system-traits": {
                "payload": {
                    "auth": {"value": "invite_only"},
                    "realtime": {"value": False},
                    "interface": {"value": "web"},
                }
            },
            "mvp-scope": {"payload": {"appetite": "small"}},
        },
    }
    checks = {c.check: c for c in check_expected(idea, state)}
    assert checks["has_auth"].passed is True
    assert checks["has_realtime"].passed is False and checks["has_realtime"].actual is False
    assert checks["primary_interface"].passed is True  # web_and_mobile accepts web
    assert checks["complexity"].passed is True
    assert checks["anchor_invariant: 1 receiver + 7 givers per session"].passed is True
    assert checks["anchor_invariant: live online sessions"].passed is False
    summary = checks_summary(list(checks.values()))
    assert summary["failed"] == 3 and summary["not_run"] == 0  # live, orchestrator, realtime
    empty = checks_summary(check_expected(idea, {}))
    assert empty["not_run"] == len(checks) and empty["pass_rate"] is None
    assert interface_matches("web", "web_and_mobile") and not interface_matches("cli", "web")


# -- chaos -----------------------------------------------------------------------------------------
def _state() -> dict[str, Any]:
    anchor = {
        "intent": {"goal": "g"},
        "invariants": [
            {"property": "access_model", "value": "closed", "source": "s", "confidence": 0.9},
            {
                "property": "group_structure",
                "value": "eight members: receiver and seven givers",
                "source": "s",
                "confidence": 0.9,
            },
        ],
    }
    return {
        "anchor": anchor,
        "anchor_text": "x",
        "outputs": {
            "market-context": {
                "tldr": "t",
                "content": "c",
                "claims": [],
                "payload": {"competitors": [{"name": "A", "jtbd_match": "direct"}]},
            },
            "risk-assessment": {"tldr": "seven givers and one receiver", "payload": {}},
            "mvp-scope": {"tldr": "eight members, a receiver with seven givers", "payload": {}},
        },
    }


def test_chaos_specs_inject_and_measure() -> None:
    specs = ChaosSpec.parse_list("all")
    assert [s.label for s in specs] == [
        "competitor@market-context",
        "statistic@market-context",
        "invariant@anchor-extraction",
    ]
    assert ChaosSpec.parse_list("off") == [] and specs[0].fork_stage() == "risk-assessment"
    assert specs[2].fork_stage() == "market-context"
    with pytest.raises(InputError, match="Unknown chaos kind"):
        ChaosSpec.parse_list("meteor")
    with pytest.raises(InputError, match="before story-generation"):
        ChaosSpec.parse_list("competitor@story-generation")

    state = _state()
    assert "HerdBid" in inject(state, specs[0])
    market = state["outputs"]["market-context"]
    assert market["payload"]["competitors"][0]["name"].startswith("HerdBid")
    assert "HerdBid" in market["tldr"] and "HerdBid" in market["content"]
    assert "12,400" in inject(state, specs[1])
    assert state["outputs"]["market-context"]["claims"][-1]["source"] == "web_search"

    clean = _state()
    dropped = _state()
    note = inject(dropped, specs[2], prefer=["givers"])
    assert note.startswith("group_structure")
    assert [i["property"] for i in dropped["anchor"]["invariants"]] == ["access_model"]
    assert "group_structure" not in dropped["anchor_text"]
    chaotic = json.loads(json.dumps(clean))
    chaotic["outputs"]["mvp-scope"]["tldr"] = "an open board"
    measured, reached = measure(specs[2], note, clean, chaotic)
    assert measured == ["risk-assessment", "mvp-scope"] and reached == ["mvp-scope"]
    chaotic["outputs"]["risk-assessment"]["tldr"] = "HerdBid is a rival"
    assert measure(specs[0], "", clean, chaotic) == (
        ["risk-assessment", "mvp-scope"],
        ["risk-assessment"],
    )
    rows = summarize(
        [
            ChaosResult(kind="competitor", stage="market-context", verifiers="off", rate=0.5),
            ChaosResult(kind="competitor", stage="market-context", verifiers="on", rate=0.125),
        ]
    )
    assert rows == [
        {
            "injection": "competitor@market-context",
            "rate_off": 0.5,
            "rate_on": 0.125,
            "reduction": 0.75,
            "target_met": True,
        }
    ]


# -- calibration -----------------------------------------------------------------------------------
def test_calibration_counts() -> None:
    issues = [
        JudgeIssue(stage="mvp-scope", invariant="group_structure", detail="groups gone"),
        JudgeIssue(stage="market-context", detail="unsourced statistic about video tools"),
        JudgeIssue(stage="risk-assessment", detail="no risk for missed sessions"),
    ]
    flags = [
        {
            "validator": "invariant_coverage",
            "stage": "mvp-scope",
            "invariant": "group_structure",
            "message": "drops it",
        },
        {
            "validator": "claim_consistency",
            "stage": "market-context",
            "invariant": None,
            "message": "market-context states an unsourced statistic",
        },
        {
            "validator": "trait_propagation",
            "stage": "build-buy-analysis",
            "invariant": "access_model",
            "message": "open registration",
        },
    ]
    assert matches(issues[0], flags[0]) and matches(issues[1], flags[1])
    assert not matches(issues[0], flags[1])
    result = calibrate(issues, flags, ["appetite"])
    v = result["validators"]
    assert v["invariant_coverage"]["tp"] == 1 and v["invariant_coverage"]["fp_rate"] == 0.0
    assert v["trait_propagation"]["fp"] == 1 and v["trait_propagation"]["may_block"] is False
    assert v["appetite"]["flags"] == 0 and v["appetite"]["fp_rate"] is None
    assert result["misses"] == 1 and result["miss_rate"] == pytest.approx(0.333)
    no_evidence = calibrate([], flags)
    assert no_evidence["validators"]["claim_consistency"]["fp_rate"] is None
    merged = merge([result, no_evidence])
    assert merged["validators"]["trait_propagation"]["fp"] == 1
    assert merged["judge_issues"] == 3


# -- report diff -----------------------------------------------------------------------------------
def _report(
    scores: dict[str, float | None],
    *,
    passed_check: bool = True,
    partial: bool = False,
    comparable: str = "replay",
) -> dict[str, Any]:
    judgements = {
        k: {"score": v, "source": "judge" if v is not None else "failed", "agreement": 1.0}
        for k, v in scores.items()
    }
    return {
        "schema": "haytham-eval-report/1",
        "run_id": "r",
        "partial": partial,
        "stopped_reason": "budget" if partial else None,
        "notes": [],
        "overall": None,
        "config": {
            "provider": "replay",
            "mode": "replay",
            "models": {"reasoning": "replay"},
            "k": 2,
            "deterministic": False,
            "comparable": comparable,
        },
        "rubrics": [{"id": k} for k in scores],
        "ideas": [
            {
                "id": "i",
                "judgements": judgements,
                "mean_score": None,
                "checks": [
                    {
                        "check": "has_realtime",
                        "expected": True,
                        "actual": passed_check,
                        "passed": passed_check,
                    }
                ],
                "checks_summary": {"passed": int(passed_check), "failed": int(not passed_check)},
                "pipeline": {"status": "done", "error": None, "reused": False},
                "usage": {
                    "calls": 1,
                    "input_tokens": 1,
                    "output_tokens": 1,
                    "cost_usd": 0.0,
                    "wall_ms": 10.0,
                },
                "divergence": {"key_points": {}},
                "chaos": {"summary": []},
            }
        ],
        "calibration": {},
        "totals": {
            "calls": 1,
            "cached": 0,
            "input_tokens": 1,
            "output_tokens": 1,
            "cost_usd": 0.0,
            "wall_ms": 10.0,
        },
    }


def test_compare_regressions_and_tolerance() -> None:
    base = _report({"a": 4.5, "b": 4.0, "c": 3.0})
    same = compare(base, _report({"a": 4.0, "b": 4.0, "c": 3.5}), 0.5, "prev")
    assert same["passed"] and same["compared_pairs"] == 3 and len(same["changes"]) == 2
    worse = compare(base, _report({"a": 2.0, "b": 4.0, "c": None}, passed_check=False), 0.5)
    reasons = {(r["rubric"], r["reason"].split(" ")[0]) for r in worse["regressions"]}
    assert ("a", "dropped") in reasons and ("c", "score") in reasons
    assert ("check has_realtime", "deterministic") in reasons
    partial = compare(base, _report({"a": 4.5, "b": 4.0, "c": None}, partial=True), 0.5)
    assert partial["passed"]  # a partial run's missing scores are not regressions
    assert compare(None, base, 0.5)["passed"]


def test_find_previous_skips_regressions_partials_and_other_providers(tmp_path: Path) -> None:
    def put(name: str, report: dict[str, Any], passed: bool = True) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        write_report(
            folder,
            {
                **report,
                "comparison": {
                    "passed": passed,
                    "previous": None,
                    "regressions": [],
                    "improvements": [],
                    "tolerance": 0.5,
                },
            },
        )
        return folder

    good = put("20260101T000000Z", _report({"a": 4.0}))
    put("20260102T000000Z", _report({"a": 1.0}), passed=False)
    put("20260103T000000Z", _report({"a": 4.0}, partial=True))
    put("20260104T000000Z", _report({"a": 4.0}, comparable="anthropic"))
    current = tmp_path / "20260105T000000Z"
    assert find_previous(tmp_path, current, "replay") == good
    summary = (good / "summary.md").read_text()
    assert "| a | 4.00 [1.00] |" in summary
    assert render_summary({**_report({"a": None}), "comparison": {"previous": None}})


def test_reuse_session_copies_the_newest_finished_one(tmp_path: Path) -> None:
    from haytham.evals.pipeline import reuse_session

    for run, status in (("20260101T000000Z", "done"), ("20260102T000000Z", "failed")):
        folder = tmp_path / run / "sessions" / "eval-x-1"
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"status": status}))
        (folder / "marker").write_text(run)
    into = tmp_path / "20260103T000000Z" / "sessions"
    assert reuse_session(tmp_path, "eval-x-1", into)
    assert (into / "eval-x-1" / "marker").read_text() == "20260101T000000Z"
    assert not reuse_session(tmp_path, "eval-x-1", into)  # already there
    assert not reuse_session(tmp_path, "eval-y-1", into)
