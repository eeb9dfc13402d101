"""Term weights and the relevance floor (SPEC R-5.2, R-5.3).

``w(t)`` is the BM25 IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` where ``df`` counts the tools
the term matches in any field (through a prefix, synonym or typo too). A term that matches
nothing has ``df = 0`` and so the largest weight: it keeps its full weight in the total.

A tool passes the floor when the weight of the terms it matches (typo matches at their
similarity) is at least half of the total. Refinement (R-5.3): a term recognized as an argument
value that matches nothing is left out of the total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from toolcrib.search.lexical import TermMatch

__all__ = ["FLOOR", "QueryTerm", "Weighed", "idf", "weigh", "widen"]

FLOOR = 0.5
_EPSILON = 1e-9

Vector = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


def idf(df: int, n: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True)
class QueryTerm:
    word: str
    match: TermMatch
    value: bool  # recognized as an argument value (R-5.3 refinement)


@dataclass(frozen=True, slots=True)
class Weighed:
    """Per-slot score and matched share of one query."""

    score: Vector  # sum over terms of w(t) x field sum
    share: Vector  # matched weight / total weight, 0..1
    passing: Mask  # at or over the floor
    total: float
    weights: dict[str, float]
    companion: Mask | None = None  # passing only as a runner-up of a tool that passed (ranks after)
    name_share: Vector | None = None  # share of each tool's name weight the query holds (tie-break)

    def rank_key(self) -> Vector:
        """The score, with every tool that passed on its own evidence ahead of any companion."""
        if self.companion is None or not self.companion.any():
            return self.score
        lead = float(self.score.max()) + 1.0
        key: Vector = np.where(self.passing & ~self.companion, self.score + lead, self.score)
        return key


def weigh(
    terms: list[QueryTerm], n: int, size: int, *, floor: float = FLOOR, drop_values: bool = True
) -> Weighed:
    """Weigh the terms of one query over ``size`` slots of an index of ``n`` tools."""
    score = np.zeros(size)
    matched = np.zeros(size)
    total = 0.0
    weights: dict[str, float] = {}
    for term in terms:
        df = int(np.count_nonzero(term.match.strength))
        weight = weights[term.word] = idf(df, n)
        if df == 0 and term.value and drop_values:
            continue
        total += weight
        score += weight * term.match.field
        matched += weight * term.match.strength
    share = np.zeros(size) if total <= 0 else matched / total
    passing = (share >= floor - _EPSILON) & (score > 0)
    return Weighed(score, share, passing, total, weights)


def widen(
    weighed: Weighed,
    coverage: tuple[Vector, Vector] | None,
    *,
    share: float,
    words: int,
    companions: float | None,
) -> Weighed:
    """The refinements of R-5.3 for long queries (docs/search.md, "The relevance floor").

    A tool also passes when the query holds at least ``words`` of its name words carrying at
    least ``share`` of its name's weight (``coverage``: per-slot name share and word count).
    Once any tool passes, a tool scoring at least ``companions`` times the best passing score
    passes too, ranked after every tool that passed on its own: the query is about connected
    tools, and these are the runners-up a multi-step task needs.
    """
    matched = weighed.score > 0
    passing = weighed.passing.copy()
    if coverage is not None:
        covered, name_words = coverage
        passing |= matched & (name_words >= words) & (covered >= share - _EPSILON)
    companion = np.zeros_like(passing)
    if companions is not None and passing.any():
        best = float(weighed.score[passing].max())
        companion = matched & ~passing & (weighed.score >= companions * best - _EPSILON)
    tiebreak = None if coverage is None else coverage[0]
    return replace(weighed, passing=passing | companion, companion=companion, name_share=tiebreak)
