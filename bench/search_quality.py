"""Search quality: toolcrib (lexical, + meaning), plain BM25 and the literal seed rules, in one run.

.venv/bin/python bench/search_quality.py [--no-semantic]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import bm25s
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT, catalog, read_jsonl
from toolcrib.search import SEED_RULES, SearchDoc, SearchIndex, SearchOptions
from toolcrib.search.evaluate import Ranking, metrics, public_id, rank_queries

SETS = {
    "intents_dev": "intents_dev.jsonl",
    "livemcpbench": "livemcpbench/queries.jsonl",
    "metatool_no_tool": "negatives/metatool_no_tool.jsonl",
    "leave_servers_out": "negatives/livemcpbench_leave_servers_out.jsonl",
}
COLUMNS = ("hit@1", "hit@3", "mrr@10", "positives_non_empty", "negatives_empty", "r@5")


def _engine(accounts: dict[str, list[SearchDoc]], **kwargs: object) -> Callable[[list[dict]], list[Ranking]]:  # type: ignore[type-arg]
    index = SearchIndex(**kwargs)  # type: ignore[arg-type]
    for account, docs in accounts.items():
        index.replace_account(account, docs)
    return lambda rows: rank_queries(index, accounts, rows)


def _bm25(accounts: dict[str, list[SearchDoc]]) -> Callable[[list[dict]], list[Ranking]]:  # type: ignore[type-arg]
    docs = [d for ds in accounts.values() for d in ds]
    retriever = bm25s.BM25()
    corpus = [f"{d.name} {d.account} {d.connector} {d.description}" for d in docs]
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    def run(rows: list[dict]) -> list[Ranking]:  # type: ignore[type-arg]
        out = []
        for row in rows:
            excluded = set(row.get("exclude_servers") or ())
            tokens = bm25s.tokenize([row["query"]], stopwords="en", show_progress=False)
            ids, scores = retriever.retrieve(tokens, k=min(60, len(docs)), show_progress=False)
            ranked = [docs[i].public_name for i, s in zip(ids[0], scores[0], strict=True) if s > 0]
            ranked = [n for n in ranked if n.split("__")[0] not in excluded][:10]
            gold = frozenset(public_id(g) for g in row.get("gold") or ())
            groups = tuple(frozenset(public_id(g) for g in grp) for grp in row.get("gold_groups") or ())
            out.append(Ranking(row["qid"], ranked, gold, groups))
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-semantic", action="store_true")
    args = parser.parse_args()
    accounts = catalog()
    systems = {
        "toolcrib": _engine(accounts),
        "toolcrib, no floor (ranking only)": _engine(accounts, options=SearchOptions(floor=0.0)),
        "seed rules (literal R-5.2/5.3)": _engine(accounts, options=SEED_RULES),
        "plain BM25 (bm25s)": _bm25(accounts),
    }
    if not args.no_semantic:
        systems["toolcrib + semantic"] = _engine(accounts, semantic=True)
    rows = {name: read_jsonl(DATA / path) for name, path in SETS.items()}
    results = {system: {name: metrics(run(rows[name])) for name in SETS} for system, run in systems.items()}
    for name in SETS:
        table = Table(title=name)
        table.add_column("system")
        for column in COLUMNS:
            table.add_column(column, justify="right")
        for system, figures in results.items():
            values = figures[name]
            table.add_row(system, *("-" if values[c] is None else f"{values[c]:.3f}" for c in COLUMNS))
        Console().print(table)
    OUT.mkdir(exist_ok=True)
    (OUT / "search_quality.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
