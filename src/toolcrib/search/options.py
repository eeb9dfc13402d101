"""The engine's knobs. The defaults are the shipped behaviour; the others exist so the quality
benchmark can measure each refinement against the literal rules in the same run."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SEED_RULES", "SearchOptions"]


@dataclass(frozen=True, slots=True)
class SearchOptions:
    stemming: bool = True
    """Fold plurals (``files`` -> ``file``)."""
    typo_threshold: float | None = 0.5
    """R-5.7 trigram similarity a typo match needs; None disables typo matching."""
    floor: float = 0.5
    """R-5.3: the share of the query's weight a tool must match (0 ranks without a floor)."""
    name_coverage: float | None = 0.67
    """R-5.3 refinement: a tool also passes when the query holds at least ``name_coverage_words`` of
    its name words carrying this share of its name's weight (None: the query-side floor only)."""
    name_coverage_words: int = 2
    companions: float | None = 0.5
    """R-5.3 refinement: once a tool passes, a tool scoring at least this fraction of the best
    passing score passes too (None: off)."""
    drop_values: bool = True
    """R-5.3 refinement: value words that match nothing leave the floor's total."""
    synonyms: bool = True
    """Match through the short synonym list."""
    description_length_b: float = 0.25
    """BM25 length normalization of the description score (0: always 1, as R-5.2 reads)."""
    name_length_b: float = 0.0
    """The same for the name score (0: always 5 or 3, as R-5.2 reads)."""
    known_apps: bool = True
    """R-5.11: answer ``not_connected`` for a named known app no visible account carries."""
    fitted: bool = True
    """R-5.3/R-5.8: rank by the fitted fusion and answer by the calibrated gate (``gate.py``). False
    applies the hand-set relevance floor of the first engine (the benchmark's baseline rows)."""


SEED_RULES = SearchOptions(
    stemming=False,
    typo_threshold=None,
    drop_values=False,
    synonyms=False,
    known_apps=False,
    description_length_b=0.0,
    name_coverage=None,
    companions=None,
    fitted=False,
)
"""The literal rules of R-5.2/R-5.3 with no refinement: the benchmark's floor baseline."""
