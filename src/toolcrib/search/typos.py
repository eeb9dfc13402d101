"""Typo and partial-word tolerance by character trigrams (SPEC R-5.7).

A word is padded like PostgreSQL's pg_trgm (two spaces before, one after) and cut into
trigrams; similarity is the Jaccard share of trigrams two words have in common. "wheather" and
"weather" share 6 of 11 (0.55); "scrennshot" and "screenshot" 8 of 14 (0.57).
The vocabulary is reference-counted so an account can be replaced without a rebuild.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["MIN_TYPO_LENGTH", "TrigramVocabulary", "trigrams"]

MIN_TYPO_LENGTH = 4
"""Shorter words have too few trigrams for a similarity to mean anything."""


def trigrams(word: str) -> frozenset[str]:
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


class TrigramVocabulary:
    """Words of the index, looked up by trigram similarity."""

    def __init__(self) -> None:
        self._count: Counter[str] = Counter()
        self._grams: dict[str, frozenset[str]] = {}
        self._by_gram: dict[str, set[str]] = {}

    def add(self, word: str) -> None:
        if len(word) < MIN_TYPO_LENGTH or not word.isascii() or not word.isalpha():
            return
        self._count[word] += 1
        if self._count[word] == 1:
            grams = trigrams(word)
            self._grams[word] = grams
            for gram in grams:
                self._by_gram.setdefault(gram, set()).add(word)

    def discard(self, word: str) -> None:
        if word not in self._count:
            return
        self._count[word] -= 1
        if self._count[word] > 0:
            return
        del self._count[word]
        for gram in self._grams.pop(word):
            holders = self._by_gram[gram]
            holders.discard(word)
            if not holders:
                del self._by_gram[gram]

    def similar(self, word: str, threshold: float) -> list[tuple[str, float]]:
        """Vocabulary words at least ``threshold`` similar to ``word``, most similar first."""
        if len(word) < MIN_TYPO_LENGTH or not word.isascii():
            return []
        grams = trigrams(word)
        shared: Counter[str] = Counter()
        for gram in grams:
            shared.update(self._by_gram.get(gram, ()))
        out: list[tuple[str, float]] = []
        for other, common in shared.items():
            similarity = common / (len(grams) + len(self._grams[other]) - common)
            if similarity >= threshold and other != word:
                out.append((other, similarity))
        out.sort(key=lambda pair: (-pair[1], pair[0]))
        return out
