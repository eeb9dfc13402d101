"""The meaning channel: one unit vector per indexed tool, and cosine against a query (SPEC R-5.8).

Each tool is embedded from ``doc_text(doc)`` (``"{name words}: {description}"``). The vectors are
computed outside this module (the gateway encodes off the event loop and caches them by text hash
in the store; the evaluation tools encode in place) and handed to ``add``; this module only keeps
them in a matrix whose row is the tool's slot in the index, so a cosine against every tool is one
matrix-vector product.

``load_encoder`` returns the packaged encoder, or None (with the reason) when it cannot be used:
search then runs on words and trigrams alone.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
import numpy.typing as npt

from toolcrib.search.documents import SearchDoc
from toolcrib.search.tokenize import raw_words

__all__ = ["DIMENSIONS", "Encoder", "MeaningChannel", "doc_text", "load_encoder"]

logger = logging.getLogger(__name__)

DIMENSIONS = 384
MAX_QUERY_CHARACTERS = 1_000
"""Only the first characters of a query are encoded (the rest costs time and adds nothing)."""

Matrix = npt.NDArray[np.float32]
Vector = npt.NDArray[np.float64]


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> Matrix: ...


def doc_text(doc: SearchDoc) -> str:
    """The text a tool is embedded from; also its key in the vector cache."""
    return f"{' '.join(raw_words(doc.name))}: {doc.description}"


def load_encoder() -> tuple[Encoder | None, str | None]:
    """The packaged encoder and None, or None and why it cannot be used."""
    # Imported here, not at the top, so a process that never builds an encoder (``semantic =
    # false``, ``toolcrib eval search --lexical``, every other CLI command) does not import the
    # encoder's module (~20 ms: ctypes, the model cache, the int8 rewriter); onnxruntime and
    # tokenizers are imported later still, by the encoder. A lazy load, not a dodged circle:
    # ``vectors`` imports nothing of this module.
    from toolcrib.search.vectors import EncoderUnavailable, MiniLM

    try:
        return MiniLM.packaged(), None
    except EncoderUnavailable as exc:
        logger.warning("meaning search is off: %s", exc)
        return None, str(exc)


class MeaningChannel:
    """Unit vectors of the indexed tools, one row per slot (zero rows for empty slots)."""

    def __init__(self) -> None:
        self._rows: Matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)

    def add(self, slots: list[int], vectors: Matrix) -> None:
        if not slots:
            return
        need = max(slots) + 1
        if need > len(self._rows):
            grown = np.zeros((max(need, 2 * len(self._rows)), DIMENSIONS), dtype=np.float32)
            grown[: len(self._rows)] = self._rows
            self._rows = grown
        self._rows[slots] = vectors

    @property
    def rows(self) -> Matrix:
        """The tools' unit vectors, one row per slot (zero rows for empty slots)."""
        return self._rows

    def discard(self, slot: int) -> None:
        if slot < len(self._rows):
            self._rows[slot] = 0.0

    def cosine(self, query: Matrix, size: int) -> Vector:
        """Cosine of the query's unit vector with every slot (0 for empty slots), to 6 decimals.

        A matrix product may round identical rows differently in their last bits, by where they
        sit in the matrix; rounded, identical tools (one server in two accounts) get identical
        cosines, so the same features, and R-5.6 orders them by name."""
        out = np.zeros(size)
        rows = min(size, len(self._rows))
        out[:rows] = self._rows[:rows] @ query
        return np.round(out, 6)
