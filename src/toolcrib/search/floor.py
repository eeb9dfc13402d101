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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolcrib.search.lexical import TermMatch

__all__ = ["FLOOR", "QueryTerm", "Weighed", "idf", "weigh"]

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
