"""Search latency, build time and memory at 1k/10k/100k tools, against bm25s in the same run.

.venv/bin/python bench/search_speed.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import bm25s
from rich.console import Console
from rich.table import Table

from _catalog import DATA, OUT, catalog, grown, read_jsonl
from toolcrib.search import SearchIndex


def _percentiles(run: Callable[[str], object], queries: list[str], rounds: int) -> tuple[float, float]:
    times: list[float] = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            run(query)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))]


def _rss_mib() -> float:
    """Resident set size now (Linux), in MiB: the index's memory is the growth over its build."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _toolcrib(accounts: dict[str, list], queries: list[str]) -> dict[str, float]:  # type: ignore[type-arg]
    before = _rss_mib()
    start = time.perf_counter()
    index = SearchIndex()
    for account, docs in accounts.items():
        index.replace_account(account, docs)
    build = time.perf_counter() - start
    memory = _rss_mib() - before
    index.search(queries[0])
    p50, p99 = _percentiles(lambda q: index.search(q, limit=3), queries, 3)
    return {"build_s": build, "p50_ms": p50, "p99_ms": p99, "memory_mib": memory}


def _bm25s(accounts: dict[str, list], queries: list[str]) -> dict[str, float]:  # type: ignore[type-arg]
    docs = [d for ds in accounts.values() for d in ds]
    corpus = [f"{d.name} {d.account} {d.connector} {d.description}" for d in docs]
    start = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    build = time.perf_counter() - start

    def run(query: str) -> object:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        return retriever.retrieve(tokens, k=3, show_progress=False)

    p50, p99 = _percentiles(run, queries, 3)
    return {"build_s": build, "p50_ms": p50, "p99_ms": p99}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    queries = [row["query"] for row in read_jsonl(DATA / "intents_dev.jsonl")]
    base = catalog()
    results = []
    for size in sizes:
        accounts = grown(base, size)
        results.append(
            {"tools": size, "toolcrib": _toolcrib(accounts, queries), "bm25s": _bm25s(accounts, queries)}
        )
    table = Table(title="search speed (intents_dev queries, limit 3)")
    for column in (
        "tools",
        "toolcrib p50 ms",
        "p99 ms",
        "build s",
        "RSS growth MiB",
        "bm25s p50 ms",
        "p99 ms",
        "build s",
    ):
        table.add_column(column, justify="right")
    for r in results:
        t, b = r["toolcrib"], r["bm25s"]
        table.add_row(
            str(r["tools"]),
            *(f"{t[k]:.2f}" for k in ("p50_ms", "p99_ms", "build_s", "memory_mib")),
            *(f"{b[k]:.2f}" for k in ("p50_ms", "p99_ms", "build_s")),
        )
    Console().print(table)
    OUT.mkdir(exist_ok=True)
    (OUT / "search_speed.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
