"""Tool-side coverage: the second way over the relevance floor (refinement of SPEC R-5.3).

The half-weight floor reads the query's side: a tool must match half of what the query says. A
long multi-step task ("find the whois record of baidu.com, fetch its sitemap and write a
markdown report") names several tools, and no single one matches half of it. The tool's side
reads the other way: a tool's own name is what it does, so when the query holds **at least two
of the tool's name words** and they carry **at least half of the name's weight** (each name word
weighed by its IDF, so ``get`` or ``list`` count little and ``whois`` or ``sitemap`` much), the
query is about that tool, however long the query is.

Name words are the tool name's parts after camelCase splitting and plural folding; one-character
parts are ignored. A query word meets a name word exactly (prefixes and typos are for the
query-side floor; a camelCase whole such as ``npmlatest`` counts as one word); a synonym counts
as the word. The per-tool totals are recomputed lazily after
a catalog change, so ``replace_account`` stays cheap.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from toolcrib.search.floor import idf
from toolcrib.search.postings import Postings
from toolcrib.search.tokenize import raw_words, stem

__all__ = ["NameCoverage", "name_parts"]

Vector = npt.NDArray[np.float64]


def name_parts(name: str) -> frozenset[str]:
    """The words of a tool name that coverage weighs (no camelCase whole, no single letters)."""
    return frozenset(stem(word) for word in raw_words(name) if len(word) > 1)


class NameCoverage:
    """Per slot: the name words, and (lazily) their total IDF weight."""

    def __init__(self) -> None:
        self._parts: dict[int, frozenset[str]] = {}
        self._idf: dict[str, float] = {}
        self._totals: Vector | None = None

    def add(self, slot: int, parts: frozenset[str]) -> None:
        self._parts[slot] = parts
        self._invalidate()

    def discard(self, slot: int) -> None:
        self._parts.pop(slot, None)
        self._invalidate()

    def _invalidate(self) -> None:
        self._idf.clear()
        self._totals = None

    def weight(self, word: str, postings: Postings, n: int) -> float:
        """IDF of a name word, ``df`` counting the tools that hold it in any field."""
        cached = self._idf.get(word)
        if cached is None:
            holders = np.union1d(
                np.union1d(postings.name.slots(word), postings.label.slots(word)),
                postings.description.slots(word),
            )
            cached = self._idf[word] = idf(len(holders), n)
        return cached

    def _name_totals(self, size: int, postings: Postings, n: int) -> Vector:
        if self._totals is None or len(self._totals) < size:
            totals = np.zeros(size)
            for slot, parts in self._parts.items():
                totals[slot] = sum(self.weight(word, postings, n) for word in parts)
            self._totals = totals
        return self._totals[:size]

    def covered(self, terms: list[list[str]], postings: Postings, n: int, size: int) -> tuple[Vector, Vector]:
        """Per slot: the share of its name weight the query's words hold, and how many name words.

        ``terms`` holds, per query word, the word and its synonyms.
        """
        matched = np.zeros(size)
        count = np.zeros(size)
        for alternatives in terms:
            done = np.zeros(size, dtype=bool)
            for word in alternatives:
                fresh = postings.name.slots(word)
                fresh = fresh[~done[fresh]]
                matched[fresh] += self.weight(word, postings, n)
                count[fresh] += 1
                done[fresh] = True
        totals = self._name_totals(size, postings, n)
        share = np.divide(matched, totals, out=np.zeros(size), where=totals > 0)
        return np.minimum(share, 1.0), count
