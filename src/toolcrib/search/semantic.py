"""The optional meaning channel and its fusion with the lexical ranking (SPEC R-5.8).

Each tool is embedded once, at index time, from ``"{name words}: {description}"``; vectors are
cached by that text, so replacing an account whose tools did not change costs no encoding.
A query's ranking by cosine is fused with the lexical one by reciprocal-rank fusion. The floor
still decides what may be returned: a tool under it is lifted only on strong meaning evidence
(thresholds in ``SearchOptions``, chosen on the benchmark; see docs/search.md), and a query
naming an app that is not connected never reaches this channel (R-5.11).

When the extra is not installed, ``MeaningChannel.load`` returns None and search stays lexical,
saying nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from toolcrib.search.floor import Weighed
from toolcrib.search.options import SearchOptions
from toolcrib.search.ranking import fuse
from toolcrib.search.tokenize import raw_words

if TYPE_CHECKING:
    from toolcrib.search.index import SearchDoc

__all__ = ["Encoder", "MeaningChannel", "doc_text"]

_DIMENSIONS = 384
_CACHE_SIZE = 200_000
_QUERY_CACHE_SIZE = 1_024

Matrix = npt.NDArray[np.float32]
Vector = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class Encoder(Protocol):
    def encode(self, texts: list[str], batch_size: int = 64) -> Matrix: ...


def doc_text(doc: SearchDoc) -> str:
    return f"{' '.join(raw_words(doc.name))}: {doc.description}"


class MeaningChannel:
    """Unit vectors of the indexed tools, one row per slot."""

    def __init__(self, encoder: Encoder) -> None:
        self._encoder = encoder
        self._rows: Matrix = np.zeros((0, _DIMENSIONS), dtype=np.float32)
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._queries: OrderedDict[str, Matrix] = OrderedDict()

    @classmethod
    def load(cls) -> MeaningChannel | None:
        """The channel over the packaged model, or None when the extra is not installed."""
        try:
            from toolcrib.search.vectors import MiniLM
        except ImportError:
            return None
        return cls(MiniLM.packaged())

    def add(self, docs: list[tuple[int, SearchDoc]]) -> None:
        texts = [doc_text(doc) for _, doc in docs]
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self._encoder.encode(missing), strict=True):
                self._remember(self._cache, text, vector, _CACHE_SIZE)
        need = max(slot for slot, _ in docs) + 1
        if need > len(self._rows):
            grown = np.zeros((max(need, 2 * len(self._rows)), _DIMENSIONS), dtype=np.float32)
            grown[: len(self._rows)] = self._rows
            self._rows = grown
        for (slot, _), text in zip(docs, texts, strict=True):
            self._rows[slot] = self._cache[text]

    def discard(self, slot: int) -> None:
        self._rows[slot] = 0.0

    @staticmethod
    def _remember(cache: OrderedDict[str, Matrix], key: str, value: Matrix, size: int) -> None:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)

    def cosine(self, query: str, size: int) -> Vector:
        vector = self._queries.get(query)
        if vector is None:
            vector = self._encoder.encode([query])[0]
        self._remember(self._queries, query, vector, _QUERY_CACHE_SIZE)
        out = np.zeros(size)
        rows = min(size, len(self._rows))
        out[:rows] = self._rows[:rows] @ vector
        return out

    def rerank(self, query: str, weighed: Weighed, options: SearchOptions) -> tuple[Vector, Mask, Mask]:
        """Fused key, eligibility (floor or lift) and which eligible tools were lifted."""
        cosine = self.cosine(query, len(weighed.score))
        lifted = (cosine >= options.semantic_lift) | (
            (weighed.share >= options.semantic_partial) & (cosine >= options.semantic_partial_cosine)
        )
        lifted &= ~weighed.passing
        eligible = weighed.passing | lifted
        fused = fuse(weighed.score, cosine, np.flatnonzero(eligible), options.rrf_k)
        if options.lexical_first:
            fused = fused + weighed.passing * 1.0  # every tool over the floor ranks before a lifted one
        return fused, eligible, lifted
