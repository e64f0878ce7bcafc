"""`haytham eval --provider local --ideas power-of-8 --k 1` with the bundled Gemma 3 270M (slow).

The tiny base model is not expected to produce a faithful spec or good judgements: the point is
that the suite completes, reports what happened honestly (rule scores of 1 for stages that never
produced output, failed judgements as failed) and records the time it took.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from haytham.config import Settings
from haytham.errors import ConfigError
from haytham.evals.cli import run_cli
from haytham.models.providers import check_provider

pytestmark = pytest.mark.slow


def test_local_model_suite_completes_with_honest_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        check_provider(Settings(provider="local"))
    except ConfigError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("HAYTHAM_EMBEDDINGS", "off")
    cassettes = tmp_path / "cassettes"
    rc, report = _run(
        [
            "--provider",
            "local",
            "--ideas",
            "power-of-8",
            "--k",
            "1",
            "--reports-dir",
            str(tmp_path / "reports"),
            "--chaos",
            "off",
            "--record",
            str(cassettes),
        ]
    )
    assert rc == 0
    assert not report["partial"] and report["config"]["provider"] == "local"
    (idea,) = report["ideas"]
    assert len(idea["judgements"]) == 12
    assert all(j["source"] in ("judge", "rule", "failed") for j in idea["judgements"].values())
    scored = [j["score"] for j in idea["judgements"].values() if j["score"] is not None]
    assert scored and all(1 <= s <= 5 for s in scored)
    assert idea["pipeline"]["status"] in ("done", "failed")
    assert report["totals"]["wall_ms"] > 0 and idea["usage"]["wall_ms"] > 0
    assert any("local model" in n for n in report["notes"])

    # The recorded turns replay offline to the same scores, and compare without regression.
    assert (cassettes / "power-of-8.jsonl").is_file() and (cassettes / "manifest.json").is_file()
    rc, replayed = _run(["--replay", str(cassettes), "--reports-dir", str(tmp_path / "replayed")])
    assert rc == 0 and replayed["config"]["mode"] == "replay"
    again = replayed["ideas"][0]["judgements"]
    assert {k: v["score"] for k, v in again.items()} == {
        k: v["score"] for k, v in idea["judgements"].items()
    }


def _run(argv: list[str]) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(argv)
    path = re.search(r"report: (\S+)", out.getvalue())
    assert path, out.getvalue() + err.getvalue()
    return rc, json.loads(Path(path.group(1)).read_text(encoding="utf-8"))
