"""`haytham eval` end to end over the bundled cassettes (what `make test` runs for issue 7).

No provider configured → the bundled baseline is replayed (exit 0); the deliberately worse
cassette then fails the comparison (exit 1); a partial (budget) run passes again, compared with
the baseline report, not with the regression (which never becomes a baseline).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from haytham.evals.cli import BUNDLED, add_parser, run_cli
from haytham.evals.divergence import analyse_session

WORSE = BUNDLED.parent / "worse"


class HashEmbedder:
    """A fast stand-in for MiniLM: bag of hashed words, L2-normalised (384-d)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 384] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(argv)
    return rc, out.getvalue(), err.getvalue()


def _report(stdout: str) -> dict[str, Any]:
    path = re.search(r"report: (\S+)", stdout)
    assert path, stdout
    return json.loads(Path(path.group(1)).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reports = tmp_path_factory.mktemp("reports")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("HAYTHAM_PROVIDER", raising=False)
        mp.setenv("HAYTHAM_EMBEDDINGS", "off")
        mp.chdir(tmp_path_factory.mktemp("cwd"))  # no .env here
        base = _run(["--reports-dir", str(reports)])
        worse = _run(["--replay", str(WORSE), "--reports-dir", str(reports), "--chaos", "off"])
        partial = _run(
            [
                "--replay",
                str(BUNDLED),
                "--reports-dir",
                str(reports),
                "--chaos",
                "off",
                "--budget",
                "tokens=1000",
            ]
        )
    return {"reports": reports, "base": base, "worse": worse, "partial": partial}


def test_no_provider_explains_and_replays_the_bundled_cassettes(runs: dict[str, Any]) -> None:
    rc, out, err = runs["base"]
    assert rc == 0, out + err
    assert "No model provider is configured" in err and "HAYTHAM_PROVIDER=anthropic" in err
    assert "make test-agents PROVIDER=local IDEAS=power-of-8 K=1" in err
    assert "no earlier comparable report" in out


def test_report_structure(runs: dict[str, Any]) -> None:
    report = _report(runs["base"][1])
    assert report["schema"] == "haytham-eval-report/1" and not report["partial"]
    cfg = report["config"]
    assert (cfg["mode"], cfg["provider"], cfg["k"], cfg["ideas"]) == (
        "replay",
        "replay",
        2,
        ["power-of-8"],
    )
    assert cfg["chaos"] == ["competitor@market-context"] and cfg["deterministic"]
    assert len(report["rubrics"]) == 12 and report["not_run"] == []
    (idea,) = report["ideas"]
    assert idea["pipeline"]["status"] == "done" and idea["pipeline"]["calls"] >= 11
    assert idea["checks_summary"] == {"passed": 8, "failed": 0, "not_run": 0, "pass_rate": 1.0}
    judgements = idea["judgements"]
    assert set(judgements) == {r["id"] for r in report["rubrics"]}
    assert all(j["source"] == "judge" for j in judgements.values())
    assert judgements["concept-fidelity"]["score"] == 4.5
    assert judgements["concept-fidelity"]["agreement"] == 0.75
    cap = judgements["stage-capability-model"]  # 5 vs 3 → referee 4
    assert cap["referee"]["score"] == 4 and cap["score"] == 4.0 and cap["agreement"] == 0.5
    assert 1 <= cap["band"][0] <= cap["score"] <= cap["band"][1] <= 5
    assert 4.0 <= report["overall"] <= 5.0 and report["scores"]["anchor-quality"] == 4.0
    (chaos,) = idea["chaos"]["summary"]
    assert chaos["injection"] == "competitor@market-context" and chaos["rate_off"] == 0.25
    assert idea["chaos"]["runs"][0]["reached"] == ["risk-assessment", "validation-summary"]
    if cfg["verifiers"] == "on":  # the bundled WHY verifier turn catches the competitor
        assert (chaos["rate_on"], chaos["reduction"], chaos["target_met"]) == (0.0, 1.0, True)
    cal = report["calibration"]
    # Which findings the validators raise is their own calibration; here only the bookkeeping.
    assert cal["judge_issues"] == 6 and "claim_consistency" in cal["validators"]
    assert 0 <= cal["misses"] <= cal["judge_issues"]
    for row in cal["validators"].values():
        assert row["tp"] + row["fp"] == row["flags"]
    assert idea["divergence"]["note"].startswith("embeddings off")
    totals = report["totals"]
    assert totals["wall_ms"] > 0 and totals["calls"] > 30 and totals["cost_usd"] == 0.0
    assert idea["usage"]["wall_ms"] > 0 and idea["usage"]["input_tokens"] > 0
    summary = (Path(_report_dir(runs["base"][1])) / "summary.md").read_text(encoding="utf-8")
    assert "| concept-fidelity | 4.50 [0.75] |" in summary
    assert "## Chaos propagation" in summary and "## Validator calibration" in summary


def _report_dir(stdout: str) -> str:
    return str(Path(re.search(r"report: (\S+)", stdout).group(1)).parent)  # type: ignore[union-attr]


def test_worse_cassette_fails_the_comparison(runs: dict[str, Any]) -> None:
    rc, out, _ = runs["worse"]
    assert rc == 1, out
    assert "REGRESSION against" in out
    report = _report(out)
    comp = report["comparison"]
    assert not comp["passed"] and comp["previous"] == _report_dir(runs["base"][1])
    failed = {r["rubric"] for r in comp["regressions"]}
    assert {"concept-fidelity", "stage-mvp-scope", "overall", "check has_realtime"} <= failed
    assert "anchor-quality" not in failed  # the anchor did not change
    summary = (Path(_report_dir(out)) / "summary.md").read_text(encoding="utf-8")
    assert "**REGRESSION**" in summary


def test_budget_gives_a_partial_report(runs: dict[str, Any]) -> None:
    rc, out, _ = runs["partial"]
    report = _report(out)
    assert report["partial"] and "token budget spent" in report["stopped_reason"]
    (idea,) = report["ideas"]
    assert idea["pipeline"]["status"] == "partial"
    assert rc == 0 and report["comparison"]["passed"]  # missing scores of a partial run are ok
    assert report["comparison"]["previous"] == _report_dir(runs["base"][1])


def test_divergence_curve_with_an_embedder(runs: dict[str, Any]) -> None:
    idea = _report(runs["base"][1])["ideas"][0]
    session = Path(idea["pipeline"]["session_dir"])
    findings, section = analyse_session(session, embeddings=True, embedder=HashEmbedder())
    assert section["source"] == "haytham.validate" and len(section["curve"]) == 10
    assert all(-1 <= v["idea"] <= 1 for v in section["curve"].values())
    assert section["stage10_vs_idea"] is not None and section["target_met"] in (True, False)
    assert findings and all("validator" in f for f in findings)


def test_subcommand_parser_accepts_the_documented_flags() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="haytham")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(
        [
            "eval",
            "--provider",
            "local",
            "--ideas",
            "a,b",
            "--k",
            "1",
            "--deterministic",
            "--budget",
            "tokens=5,ms=6",
            "--record",
            "r",
            "--tolerance",
            "0.3",
            "--reports-dir",
            "x",
            "--chaos",
            "all",
        ]
    )
    assert (args.command, args.provider, args.k, args.deterministic) == ("eval", "local", 1, True)
    assert args.record == Path("r") and args.replay is None and args.chaos == "all"


def test_evaluations_page_lists_reports(
    runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from streamlit.testing.v1 import AppTest

    frontend = Path(__file__).parent.parent / "frontend_streamlit"
    page = frontend / "views" / "evaluations.py"
    monkeypatch.setenv("HAYTHAM_REPORTS_DIR", str(runs["reports"]))
    at = AppTest.from_file(str(page), default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Evaluations"
    table = at.dataframe[0].value
    assert len(table) == 3 and table["regression"].tolist() == [None, True, False]
    assert any("partial report" in m.value for m in at.markdown)  # newest first shown
    worse = Path(_report_dir(runs["worse"][1])).name
    at.selectbox(key="eval_report").set_value(worse).run()
    assert any("**REGRESSION**" in m.value for m in at.markdown)
    monkeypatch.setenv("HAYTHAM_REPORTS_DIR", str(tmp_path))
    empty = AppTest.from_file(str(page), default_timeout=60).run()
    assert not empty.exception and "No evaluation reports" in empty.info[0].value
