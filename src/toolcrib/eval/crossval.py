"""Held-out figures of the fitted search: cross-validation and the usage channel's learning curve.

Queries are split into folds by a hash of their id (``data.fold_of``). For each fold the models
are fitted on the other folds, installed in a real ``SearchIndex`` (``use_gate``) and the fold's
queries run through ``SearchIndex.search``, the code path the gateway runs. Only these held-out
figures are reported; the shipped models are fitted on all the data (``bench/fit_gate.py``).
"""

from __future__ import annotations

from typing import Any

from toolcrib.eval.data import SETS, fold_of
from toolcrib.eval.engines import Engine, QueryVectors, run_set
from toolcrib.eval.examples import Query
from toolcrib.eval.fitting import fit
from toolcrib.eval.history import LEVELS, history
from toolcrib.eval.metrics import Ranking, metrics

__all__ = ["cross_validate", "learning_curve"]


def cross_validate(
    queries: list[Query],
    engines: dict[str, Engine],
    rows: dict[str, list[dict[str, Any]]],
    vectors: QueryVectors,
    folds: int,
    semantic: bool,
    keep: float,
    *,
    usage: bool = True,
) -> dict[str, dict[str, Any]]:
    """Held-out figures per set without history: each fold's queries ranked by models fitted on
    the other folds."""
    return learning_curve(queries, engines, rows, vectors, folds, semantic, keep, (0,), usage=usage)[0]


def learning_curve(
    queries: list[Query],
    engines: dict[str, Engine],
    rows: dict[str, list[dict[str, Any]]],
    vectors: QueryVectors,
    folds: int,
    semantic: bool,
    keep: float,
    levels: tuple[int, ...] = LEVELS,
    *,
    usage: bool = True,
) -> dict[int, dict[str, dict[str, Any]]]:
    """Held-out figures per history level and set: each fold's queries ranked by models fitted on
    the other folds, through the real ``SearchIndex.search``, the index having learned up to
    ``level`` past searches per tool from the other folds' queries (never the fold's own)."""
    rankings: dict[int, dict[str, list[Ranking]]] = {lv: {spec.name: [] for spec in SETS} for lv in levels}
    for k in range(folds):
        model = fit([q for q in queries if q.fold != k], semantic, keep, usage=usage)
        for engine in engines.values():
            engine.index.use_gate(model)
        training = [q for q in queries if q.fold != k]
        for level in levels:
            learned = history(training, level if semantic and usage else 0, salt="eval")
            for catalog, engine in engines.items():
                engine.index.forget()
                for name, past in learned.get(catalog, {}).items():
                    engine.index.learn(name, past, now=0.0)
            for spec in SETS:
                held = [r for r in rows[spec.name] if fold_of(r, folds) == k]
                rankings[level][spec.name] += run_set(spec, engines[spec.catalog], held, vectors)
    for engine in engines.values():
        engine.index.forget()
    return {lv: {name: metrics(r) for name, r in sets.items()} for lv, sets in rankings.items()}
