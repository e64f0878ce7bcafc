"""run_validators, settings, severity, stage filter, concurrency and the calibration targets
(lexical validators; the embedding validators are covered in test_validate_embeddings.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from haytham.config import load_settings
from haytham.errors import ConfigError, InputError
from haytham.stages import STAGES
from haytham.validate import (
    VALIDATOR_NAMES,
    Snapshot,
    ValidatorSettings,
    load_snapshot,
    run_validators,
    runner,
)
from haytham.validate.calibration import load_case, load_cases, score
from haytham.validate.common import Context
from haytham.validate.model import Finding
from haytham.validate.runner import EMBEDDING, LEXICAL, Curve
from haytham.validate.semantic import SessionVectors

DRIFT = Path(__file__).parent / "fixtures" / "drift"
LEX = ValidatorSettings(embeddings=False)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def test_settings_from_the_environment() -> None:
    def validators(env: dict[str, str]) -> ValidatorSettings:
        return load_settings(env=env, dotenv=None).validators

    s = validators(
        {"HAYTHAM_BLOCKING_VALIDATORS": "trait_propagation, appetite", "HAYTHAM_EMBEDDINGS": "off"}
    )
    assert s.blocking == frozenset({"trait_propagation", "appetite"}) and not s.embeddings
    assert validators({}).embeddings and ValidatorSettings().embeddings
    with pytest.raises(ConfigError, match="unknown validator"):
        validators({"HAYTHAM_BLOCKING_VALIDATORS": "trait_propagaton"})
    with pytest.raises(ConfigError, match="HAYTHAM_EMBEDDINGS"):
        validators({"HAYTHAM_EMBEDDINGS": "maybe"})


def test_warning_by_default_blocking_when_configured(tmp_path: Path) -> None:
    s = snap("power_of_8__open_registration", tmp_path)
    report = run_validators(s, settings=LEX)
    # second opinions (info, e.g. the competitor map's quality flags) aside, findings warn
    assert report.flagged() and {f.severity for f in report.findings} - {"info"} == {"warning"}
    strict = LEX.model_copy(update={"blocking": frozenset({"trait_propagation"})})
    report = run_validators(s, settings=strict)
    assert {f.severity for f in report.by_validator("trait_propagation")} == {"blocking"}
    assert report.blocking() == report.by_validator("trait_propagation")


def test_stage_filter_keeps_only_that_subject(tmp_path: Path) -> None:
    s = snap("power_of_8__realtime_false_vs_subscriptions", tmp_path)
    everything = run_validators(s, settings=LEX)
    only = run_validators(s, stages={"build-buy-analysis"}, settings=LEX)
    assert only.findings == [f for f in everything.findings if f.stage == "build-buy-analysis"]
    with pytest.raises(InputError):
        run_validators(s, stages={"no-such-stage"}, settings=LEX)


def test_findings_are_ordered_by_stage(tmp_path: Path) -> None:
    report = run_validators(
        snap("power_of_8__realtime_false_vs_subscriptions", tmp_path), settings=LEX
    )
    order = [spec.slug for spec in STAGES]
    stages = [f.stage for f in report.findings]
    assert len(set(stages)) >= 3 and stages == sorted(stages, key=order.index)


class _Flat:
    """Every text embeds to the same unit vector (the checks that would read it are replaced)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def test_every_configured_validator_has_a_check() -> None:
    """Each name is run by the lexical pass, the embedding pass, or (invariant_coverage) both."""
    assert set(LEXICAL) | set(EMBEDDING) == set(VALIDATOR_NAMES)
    assert set(LEXICAL) & set(EMBEDDING) == {"invariant_coverage"}


@pytest.mark.parametrize("names", [VALIDATOR_NAMES, tuple(reversed(VALIDATOR_NAMES))])
def test_validator_names_alone_order_the_run(
    names: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pass runs its checks in VALIDATOR_NAMES order, whatever order the check tables list
    them in (both are reversed here): reordering the names reorders the run."""
    ran: list[str] = []

    def lexical(name: str) -> runner.LexicalCheck:
        def check(_ctx: Context) -> list[Finding]:
            ran.append(name)
            return []

        return check

    def embedding(name: str) -> runner.EmbeddingCheck:
        def check(_ctx: Context, _vecs: SessionVectors) -> tuple[list[Finding], Curve]:
            ran.append(name)
            return [], {}

        return check

    monkeypatch.setattr(runner, "VALIDATOR_NAMES", names)
    monkeypatch.setattr(runner, "LEXICAL", {n: lexical(n) for n in reversed(list(LEXICAL))})
    monkeypatch.setattr(runner, "EMBEDDING", {n: embedding(n) for n in reversed(list(EMBEDDING))})
    run_validators(snap("power_of_8", tmp_path), settings=ValidatorSettings(), embedder=_Flat())
    assert ran == [n for n in names if n in LEXICAL] + [n for n in names if n in EMBEDDING]
    assert ran.count("invariant_coverage") == 2


def test_concurrent_sessions_in_threads(tmp_path: Path) -> None:
    names = [
        "power_of_8__open_registration",
        "power_of_8",
        "web_quiz__eleven_stories_small",
        "api_redact__express_and_fastapi",
    ] * 3
    snaps = [snap(n, tmp_path / str(i)) for i, n in enumerate(names)]
    serial = [run_validators(s, settings=LEX) for s in snaps]
    with ThreadPoolExecutor(max_workers=6) as pool:
        parallel = list(pool.map(lambda s: run_validators(s, settings=LEX), snaps))
    assert parallel == serial


def test_idea_only_session(tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    report = run_validators(Snapshot(s.idea, None, {}, ()), settings=LEX)
    assert report.findings == [] and report.divergence == {}


def test_lexical_validators_on_the_regression_fixtures(tmp_path: Path) -> None:
    """Without embeddings: no faithful session flagged; every trait contradiction but one caught
    (web_quiz__google_accounts: a Google login is SSO, which no pinned trait rules out), and
    every dropped invariant whose ids were dropped too."""
    cases = load_cases(DRIFT, tmp_path)
    cal = score(
        [(c, run_validators(load_snapshot(c.path), settings=LEX)) for c in cases], VALIDATOR_NAMES
    )
    assert cal.drift_cases >= 30 and cal.faithful_cases >= 10
    assert cal.false_positive_rate == 0, cal.flagged
    traits = [c.name for c in cases if c.drift == "trait_contradiction"]
    assert [n for n in traits if n in cal.missed] == ["web_quiz__google_accounts"]
    for name in ("power_of_8__group_structure_out", "power_of_8__no_orchestrator"):
        assert name not in cal.missed
