"""The evaluation sessions in tests/fixtures/fidelity: valid sessions, and the dev split's bar.

The test split is only checked for validity here; its scores are measured by
``benchmarks/fidelity.py --split test`` and recorded in docs/validators.md, never asserted (a test
that fails on it would invite tuning on it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from haytham.stages import STAGES, StageView
from haytham.validate import Embedder, ValidatorSettings, load_snapshot, run_validators
from haytham.validate.calibration import Case, load_cases, score
from haytham.validate.common import DESCRIPTIVE

ROOT = Path(__file__).parent / "fixtures" / "fidelity"
STRUCTURAL = ("__scoped_out", "__trait_a", "__trait_b", "__appetite", "__framework")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    return load_cases(ROOT / "dev", tmp_path_factory.mktemp("dev"))


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    emb = Embedder()
    yield emb
    emb.clear_cache()


@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_case_is_a_valid_session(split: str, tmp_path: Path) -> None:
    """Four ideas per split, eleven cases each; faithful ones pass every stage's own checks."""
    cases = load_cases(ROOT / split, tmp_path)
    ideas = {c.name.split("__", 1)[0] for c in cases}
    assert len(ideas) == 4 and len(cases) == 44
    for case in cases:
        snap = load_snapshot(case.path)
        assert snap.anchor is not None and len(snap.outputs) == 10, case.name
        if case.drift is None:
            view = StageView(idea=snap.idea, outputs=snap.outputs, anchor=snap.anchor)
            for spec in STAGES:
                assert spec.complete(snap.outputs[spec.slug], view)[1] == [], (case.name, spec)


def test_dev_split_meets_the_bar_where_structure_speaks(
    dev: list[Case], embedder: Embedder
) -> None:
    """No faithful session (faithful, terse or wordy paraphrase) flagged; every drift that
    structure can see caught by the validator built for it; the genericized session of every
    idea has the lowest fidelity point among the faithful versions."""
    settings = ValidatorSettings()
    results = [
        (c, run_validators(load_snapshot(c.path), settings=settings, embedder=embedder))
        for c in dev
    ]
    cal = score(results)
    assert cal.faithful_flagged == 0, cal.flagged
    assert not [c.name for c, _ in results if c.name.endswith(STRUCTURAL) and c.name in cal.missed]

    def lowest(report) -> float:
        return min(report.divergence[s]["fidelity"] for s in DESCRIPTIVE)

    by_name = {c.name: r for c, r in results}
    for idea in {c.name.split("__", 1)[0] for c in dev}:
        generic = lowest(by_name[f"{idea}__genericized"])
        for version in ("", "__paraphrase_terse", "__paraphrase_wordy"):
            assert generic < lowest(by_name[idea + version]), (idea, version)
