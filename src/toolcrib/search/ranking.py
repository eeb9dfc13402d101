"""From per-slot scores to the caller's hits (SPEC R-5.1, R-5.6, R-5.8, R-8.5).

Order: score descending, ties on the codepoint order of the public name (``sorted`` on ``str``
compares codepoints; no locale collation). Visibility and restriction are checked per call on
the ranked candidates only, so filtering never rebuilds the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_RESTRICTED", "confidence", "fitted_confidence", "ordered", "select"]

MAX_RESTRICTED = 10
_SCAN_AFTER_FULL = 256
"""After the hits are full, look this much further for withheld tools to name (R-8.5)."""

Vector = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]


def ordered(
    candidates: Slots, key: Vector, name_of: Callable[[int], str], second: Vector | None = None
) -> Iterator[int]:
    """Candidate slots by ``key`` descending; equal keys by ``second`` descending (the share of the
    tool's name the query covers), then by public name (R-5.6)."""
    rounded = np.round(key[candidates], 9)
    order = candidates[np.argsort(-rounded, kind="stable")]
    values = np.round(key[order], 9)
    tiebreak = np.zeros(len(key)) if second is None else np.round(second, 9)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and values[end] == values[start]:
            end += 1
        yield from sorted(order[start:end].tolist(), key=lambda s: (-tiebreak[s], name_of(s)))
        start = end


def select(
    ranked: Iterator[int],
    name_of: Callable[[int], str],
    limit: int,
    visible: Callable[[str], bool] | None,
    withheld: Callable[[str], bool] | None,
) -> tuple[list[int], list[str]]:
    """The first ``limit`` visible slots, and the names of withheld ones that matched."""
    hits: list[int] = []
    restricted: list[str] = []
    after_full = 0
    for slot in ranked:
        name = name_of(slot)
        if withheld is not None and withheld(name):
            if len(restricted) < MAX_RESTRICTED:
                restricted.append(name)
        elif len(hits) < limit and (visible is None or visible(name)):
            hits.append(slot)
        if len(hits) >= limit:
            after_full += 1
            if after_full > _SCAN_AFTER_FULL or withheld is None or len(restricted) >= MAX_RESTRICTED:
                break
    return hits, sorted(restricted)


def confidence(share: float, lifted: bool) -> str:
    """high: the tool matched (nearly) all of the query's weight; medium: over the half-weight
    floor; low: passed only by name coverage, as a companion, or lifted by meaning alone."""
    if lifted or share < 0.5:
        return "low"
    if share >= 0.85:
        return "high"
    return "medium"


def fitted_confidence(probability: float, behind: float) -> Literal["high", "medium", "low"]:
    """From the gate's probability that the query is about a connected tool, and how far (in ranker
    score) this tool stands behind the best: high for the clear best answer, low for the runners-up
    a multi-step task may need."""
    if behind > 1.0 or probability < 0.5:
        return "low"
    if probability >= 0.85 and behind <= 0.0:
        return "high"
    return "medium"
