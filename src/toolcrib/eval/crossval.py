"""Held-out figures of the fitted search: cross-validation and the usage channel's learning curve.

Queries are split into folds by a hash of their id (``data.fold_of``). For each fold the models
are fitted on the other folds, installed in a real ``SearchIndex`` (``use_gate``) and the fold's
queries run through ``SearchIndex.search``, the code path the gateway runs. Only these held-out
figures are reported; the shipped models are fitted on all the data (``bench/fit_gate.py``).
"""

from __future__ import annotations

from typing import Any

from toolcrib.eval.data import SETS, EvalSet, fold_of, gold_of
from toolcrib.eval.engines import Engine, QueryVectors, run_set
from toolcrib.eval.examples import Query
from toolcrib.eval.fitting import DESIGN, fit
from toolcrib.eval.history import LEVELS, history, sibling_case
from toolcrib.eval.metrics import Ranking, metrics
from toolcrib.search.usage import PastSearch

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
    design: str = DESIGN,
) -> dict[str, dict[str, Any]]:
    """Held-out figures per set without history: each fold's queries ranked by models fitted on
    the other folds."""
    curve = learning_curve(
        queries, engines, rows, vectors, folds, semantic, keep, (0,), usage=usage, design=design
    )
    return curve[0]


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
    design: str = DESIGN,
) -> dict[int, dict[str, Any]]:
    """Held-out figures per history level and set: each fold's queries ranked by models fitted on
    the other folds, through the real ``SearchIndex.search``, the index having learned up to
    ``level`` past searches per tool from the other folds' queries (never the fold's own).

    With history, a set's positive requests are searched twice: as they come (their right tool
    has its past searches, case a of #31) and with their right tools' past searches forgotten
    while about half of the other tools keep their own (case b, under ``"siblings"``); its
    negatives are searched with every tool's history present (case c)."""
    rankings: dict[int, dict[str, list[Ranking]]] = {lv: {spec.name: [] for spec in SETS} for lv in levels}
    siblings: dict[int, dict[str, list[Ranking]]] = {lv: {} for lv in levels}
    for k in range(folds):
        training = [q for q in queries if q.fold != k]
        model = fit(training, semantic, keep, usage=usage, design=design)
        for engine in engines.values():
            engine.index.use_gate(model)
        for level in levels:
            learned = history(training, level if semantic and usage else 0, salt="eval")
            for catalog, engine in engines.items():
                engine.index.forget()
                for name, past in learned.get(catalog, {}).items():
                    engine.index.learn(name, past, now=0.0)
            for spec in SETS:
                held = [r for r in rows[spec.name] if fold_of(r, folds) == k]
                rankings[level][spec.name] += run_set(spec, engines[spec.catalog], held, vectors)
                if level and spec.kind != "none":
                    taught = learned.get(spec.catalog, {})
                    found = _in_sibling_case(spec, engines[spec.catalog], held, vectors, taught)
                    siblings[level].setdefault(spec.name, []).extend(found)
    for engine in engines.values():
        engine.index.forget()
    out: dict[int, dict[str, Any]] = {}
    for level, sets in rankings.items():
        out[level] = {name: metrics(r) for name, r in sets.items()}
        if siblings[level]:
            out[level]["siblings"] = {name: metrics(r) for name, r in siblings[level].items()}
    return out


def _in_sibling_case(
    spec: EvalSet,
    engine: Engine,
    held: list[dict[str, Any]],
    vectors: QueryVectors,
    past: dict[str, list[PastSearch]],
) -> list[Ranking]:
    """``held``'s positive rows searched with their right tools' past searches forgotten, and about
    half of the other tools' (``history.sibling_case``), each learned back after."""
    out: list[Ranking] = []
    for row in held:
        gold = sorted(gold_of(row))
        if not gold:
            continue
        dropped = sibling_case(str(row["qid"]), gold, past)
        for name in dropped:
            engine.index.forget(name)
        try:
            out += run_set(spec, engine, [row], vectors)
        finally:
            for name in dropped:
                if past.get(name):
                    engine.index.learn(name, past[name], now=0.0)
    return out
