"""Search quality of toolcrib and its baselines on every public evaluation set, in one run.

.venv/bin/python bench/search_quality.py [--folds 5]

Systems (rows):
  * toolcrib — the default install: lexical + meaning channels, fitted ranker and gate. Its
    models are fitted on these very sets, so its figures are **cross-validated**: each fold's
    queries are searched by models fitted on the other folds (``toolcrib.eval``).
  * toolcrib, words only — the same with the meaning channel down (its own fitted models, also
    cross-validated).
  * first engine (hand-set floor) — the lexical engine of issue #4 with its relevance floor.
  * literal seed rules — R-5.2/R-5.3 read literally.
  * plain BM25 (bm25s) and MiniLM cosine (the packaged encoder, no gate), and their
    reciprocal-rank fusion: baselines that always answer.
Sets (columns of each table): intents_dev and the two LiveMCPBench sets on the 623-tool catalog,
MetaTool requests on their own 199-tool catalog, MetaTool no-tool requests on the 623-tool one.

Writes bench/out/search_quality.json; ``bench/report.py`` renders the README and docs tables
from it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import bm25s
import numpy as np
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT
from fit_gate import CachedEncoder
from toolcrib.eval.crossval import cross_validate, learning_curve
from toolcrib.eval.data import SETS, public_id
from toolcrib.eval.engines import Engine, load
from toolcrib.eval.examples import collect
from toolcrib.eval.fitting import KEEP
from toolcrib.eval.metrics import Ranking, metrics
from toolcrib.search import SEED_RULES, SearchDoc, SearchOptions
from toolcrib.search.semantic import load_encoder

COLUMNS = ("hit@1", "hit@3", "positives_non_empty", "negatives_empty", "r@5")
Run = Callable[[str, list[dict[str, Any]]], list[Ranking]]


def _ranking(row: dict[str, Any], ranked: list[str]) -> Ranking:
    gold = frozenset(public_id(g) for g in row.get("gold") or ())
    groups = tuple(frozenset(public_id(g) for g in grp) for grp in row.get("gold_groups") or ())
    return Ranking(str(row["qid"]), ranked[:10], gold, groups)


def _always(engines: dict[str, Engine], vectors: dict[Any, Any], channel: str) -> Run:
    """A baseline that always answers: BM25, cosine, or their reciprocal-rank fusion (k = 60)."""
    scorers: dict[str, Callable[[str, str], np.ndarray]] = {}
    names: dict[str, list[str]] = {}
    for catalog, engine in engines.items():
        docs: list[SearchDoc] = [d for ds in engine.accounts.values() for d in ds]
        names[catalog] = [d.public_name for d in docs]
        retriever = bm25s.BM25()
        corpus = [f"{d.name} {d.account} {d.connector} {d.description}" for d in docs]
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        matrix = np.vstack([engine.vectors[a] for a in engine.accounts]) if channel != "bm25" else None

        def score(query: str, catalog: str = catalog, r: Any = retriever, m: Any = matrix) -> np.ndarray:
            size = len(names[catalog])
            bm25 = np.zeros(size)
            ids, values = r.retrieve(
                bm25s.tokenize([query], stopwords="en", show_progress=False), k=size, show_progress=False
            )
            bm25[ids[0]] = values[0]
            if channel == "bm25":
                return bm25
            cosine = m @ vectors[(catalog, query)]
            if channel == "cosine":
                return np.asarray(cosine, dtype=float)
            fused = np.zeros(size)
            for values_ in (bm25, cosine):
                order = np.argsort(-values_, kind="stable")
                fused[order] += 1.0 / (60 + np.arange(1, size + 1))
            return fused

        scorers[catalog] = score

    def run(catalog: str, rows: list[dict[str, Any]]) -> list[Ranking]:
        out = []
        for row in rows:
            scores = scorers[catalog](row["query"])
            excluded = set(row.get("exclude_servers") or ())
            order = [i for i in np.argsort(-scores, kind="stable") if channel != "bm25" or scores[i] > 0]
            ranked = [
                names[catalog][i] for i in order[:60] if names[catalog][i].split("__")[0] not in excluded
            ]
            out.append(_ranking(row, ranked))
        return out

    return run


def _engine_rows(options: SearchOptions) -> Run:
    from toolcrib.eval.replay import rank_queries
    from toolcrib.search import SearchIndex

    indexes: dict[str, tuple[SearchIndex, dict[str, list[SearchDoc]]]] = {}

    def run(catalog: str, rows: list[dict[str, Any]]) -> list[Ranking]:
        if catalog not in indexes:
            accounts = ENGINES[catalog].accounts
            index = SearchIndex(options=options)
            for account, docs in accounts.items():
                index.replace_account(account, docs)
            indexes[catalog] = (index, accounts)
        index, accounts = indexes[catalog]
        return rank_queries(index, accounts, rows)

    return run


ENGINES: dict[str, Engine] = {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    encoder = CachedEncoder(load_encoder()[0])
    engines, rows, vectors = load(DATA, encoder)
    ENGINES.update(engines)
    results: dict[str, dict[str, Any]] = {}
    examples = collect(engines, rows, vectors, args.folds)
    curve = learning_curve(examples, engines, rows, vectors, args.folds, True, KEEP, (0, 8))
    results["toolcrib (cross-validated)"] = curve[0]
    # R-5.12: the index having learned up to 8 past searches per tool from the other folds' requests
    results["toolcrib, 8 past searches per tool (cross-validated)"] = {
        name: figures for name, figures in curve[8].items() if name != "siblings"
    }
    lexical_engines, _, _ = load(DATA, None)
    lexical = collect(lexical_engines, rows, {}, args.folds)
    results["toolcrib, words only (cross-validated)"] = cross_validate(
        lexical, lexical_engines, rows, {}, args.folds, False, KEEP
    )
    baselines: dict[str, Run] = {
        "first engine (hand-set floor)": _engine_rows(SearchOptions(fitted=False)),
        "literal seed rules": _engine_rows(SEED_RULES),
        "plain BM25 (bm25s)": _always(engines, vectors, "bm25"),
        "MiniLM cosine, no gate": _always(engines, vectors, "cosine"),
        "RRF(BM25, cosine), no gate": _always(engines, vectors, "rrf"),
    }
    for system, run in baselines.items():
        results[system] = {spec.name: metrics(run(spec.catalog, rows[spec.name])) for spec in SETS}
    for spec in SETS:
        table = Table(title=f"{spec.name} ({spec.catalog} catalog)")
        table.add_column("system")
        for column in COLUMNS:
            table.add_column(column, justify="right")
        for system, figures in results.items():
            values = figures[spec.name]
            table.add_row(system, *("-" if values[c] is None else f"{values[c]:.3f}" for c in COLUMNS))
        Console().print(table)
    OUT.mkdir(exist_ok=True)
    payload = {"folds": args.folds, "encoder": "all-MiniLM-L6-v2 int8 (onnxruntime)", "results": results}
    (OUT / "search_quality.json").write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
