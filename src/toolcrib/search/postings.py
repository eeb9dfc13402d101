"""The inverted index: for each field, word -> slots of the tools that hold it.

Slots are small integers reused after removal, so per-query score arrays stay dense numpy
vectors. Every change touches only the words of the tools it adds or removes (SPEC R-15.2: a
catalog change reaches the index without a rebuild).
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

from toolcrib.search.typos import TrigramVocabulary

__all__ = ["EMPTY", "FieldPostings", "Postings"]

Slots = npt.NDArray[np.int64]
EMPTY: Slots = np.zeros(0, dtype=np.int64)


class FieldPostings:
    """word -> slots for one field, with the numpy form of each list cached."""

    def __init__(self) -> None:
        self._slots: dict[str, set[int]] = {}
        self._arrays: dict[str, Slots] = {}
        self._sorted: list[str] | None = None

    def add(self, word: str, slot: int) -> None:
        holders = self._slots.get(word)
        if holders is None:
            holders = self._slots[word] = set()
            self._sorted = None
        holders.add(slot)
        self._arrays.pop(word, None)

    def discard(self, word: str, slot: int) -> None:
        holders = self._slots.get(word)
        if holders is None:
            return
        holders.discard(slot)
        self._arrays.pop(word, None)
        if not holders:
            del self._slots[word]
            self._sorted = None

    def __contains__(self, word: str) -> bool:
        return word in self._slots

    def slots(self, word: str) -> Slots:
        array = self._arrays.get(word)
        if array is None:
            holders = self._slots.get(word)
            if not holders:
                return EMPTY
            array = self._arrays[word] = np.fromiter(holders, dtype=np.int64, count=len(holders))
        return array

    def with_prefix(self, prefix: str) -> list[str]:
        """Words that start with ``prefix`` (the prefix itself excluded)."""
        if self._sorted is None:
            self._sorted = sorted(self._slots)
        out: list[str] = []
        start = bisect.bisect_right(self._sorted, prefix)
        for word in self._sorted[start:]:
            if not word.startswith(prefix):
                break
            out.append(word)
        return out


class Postings:
    """The three scored fields of R-5.2 plus the trigram vocabulary of R-5.7."""

    def __init__(self) -> None:
        self.name = FieldPostings()
        self.label = FieldPostings()
        self.description = FieldPostings()
        self.vocabulary = TrigramVocabulary()
        self._lengths = np.zeros((0, 2))  # per slot: name words, description words
        self._length_sum = np.zeros(2)
        self._length_count = 0

    def _fields(self) -> tuple[FieldPostings, FieldPostings, FieldPostings]:
        return self.name, self.label, self.description

    def add(self, slot: int, fields: tuple[frozenset[str], frozenset[str], frozenset[str]]) -> None:
        if slot >= len(self._lengths):
            grown = np.zeros((max(slot + 1, 2 * len(self._lengths)), 2))
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        self._lengths[slot] = (len(fields[0]), len(fields[2]))
        self._length_sum += self._lengths[slot]
        self._length_count += 1
        for postings, field_words in zip(self._fields(), fields, strict=True):
            for word in field_words:
                postings.add(word, slot)
        for word in frozenset().union(*fields):
            self.vocabulary.add(word)

    def remove(self, slot: int, fields: tuple[frozenset[str], frozenset[str], frozenset[str]]) -> None:
        self._length_sum -= self._lengths[slot]
        self._length_count -= 1
        self._lengths[slot] = (0.0, 0.0)
        for postings, field_words in zip(self._fields(), fields, strict=True):
            for word in field_words:
                postings.discard(word, slot)
        for word in frozenset().union(*fields):
            self.vocabulary.discard(word)

    def knows(self, word: str) -> bool:
        return word in self.name or word in self.label or word in self.description

    def length_weights(self, size: int, b: float, *, name: bool = False) -> npt.NDArray[np.float64]:
        """Per-slot factor on the description (or name) score: 1, or less for a field longer than
        the average (BM25's length normalization with parameter ``b``, capped at 1)."""
        if b <= 0 or self._length_count == 0:
            return np.ones(size)
        column = 0 if name else 1
        lengths = np.zeros(size)
        lengths[: min(size, len(self._lengths))] = self._lengths[:size, column]
        average = max(self._length_sum[column] / self._length_count, 1.0)
        factor: npt.NDArray[np.float64] = np.minimum(
            1.0, 1.0 / np.maximum(1.0 - b + b * lengths / average, 1e-9)
        )
        return factor
