"""The figures of an evaluation set, from its rankings (pure: rankings in, figures out).

Figures: hit@1, hit@3 and MRR@10 over positives; the share of positives with any result; the
share of negatives with none; R@5 over ``gold_groups`` (per query, the share of groups with a
member in the top 5, averaged).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RANKED_DEPTH", "Ranking", "group_recall", "hit_at", "metrics", "reciprocal_rank"]

RANKED_DEPTH = 10


@dataclass(frozen=True, slots=True)
class Ranking:
    qid: str
    ranked: list[str]
    gold: frozenset[str]
    groups: tuple[frozenset[str], ...]


def hit_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> bool:
    return any(name in gold for name in ranked[:k])


def reciprocal_rank(ranked: Sequence[str], gold: frozenset[str], k: int = RANKED_DEPTH) -> float:
    for position, name in enumerate(ranked[:k], start=1):
        if name in gold:
            return 1.0 / position
    return 0.0


def group_recall(ranked: Sequence[str], groups: Sequence[frozenset[str]], k: int = 5) -> float:
    if not groups:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for group in groups if group & top) / len(groups)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def metrics(rankings: Sequence[Ranking]) -> dict[str, float | int | None]:
    """The figures of one evaluation set (None where the set has no such queries)."""
    positives = [r for r in rankings if r.gold]
    negatives = [r for r in rankings if not r.gold]
    grouped = [r for r in rankings if r.groups]
    return {
        "queries": len(rankings),
        "positives": len(positives),
        "negatives": len(negatives),
        "hit@1": _mean([float(hit_at(r.ranked, r.gold, 1)) for r in positives]),
        "hit@3": _mean([float(hit_at(r.ranked, r.gold, 3)) for r in positives]),
        "mrr@10": _mean([reciprocal_rank(r.ranked, r.gold) for r in positives]),
        "positives_non_empty": _mean([float(bool(r.ranked)) for r in positives]),
        "negatives_empty": _mean([float(not r.ranked) for r in negatives]),
        "r@5": _mean([group_recall(r.ranked, r.groups) for r in grouped]),
    }
