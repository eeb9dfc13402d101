"""Search latency, build time and memory at 1k/10k/100k tools, against bm25s in the same run.

.venv/bin/python bench/search_speed.py [--sizes 1000,10000,100000] [--no-semantic]

With the semantic extra installed it also measures the meaning channel's index-time encoding:
the whole real catalog's tool texts through the numpy MiniLM, in texts per second, and the
arithmetic bound of this machine (its measured float32 matrix-product rate divided by the
model's FLOPs per text).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import bm25s
import numpy as np
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


_FLOPS_PER_TOKEN = 2 * 6 * (4 * 384 * 384 + 2 * 384 * 1536)
"""MiniLM-L6: six layers of four 384x384 projections and a 384x1536x384 feed-forward."""


def _matmul_gflops() -> float:
    """This machine's float32 matrix-product rate now, at the encoder's shapes."""
    x = np.random.default_rng(0).random((2048, 384), dtype=np.float32)
    w = np.random.default_rng(1).random((384, 1536), dtype=np.float32)
    x @ w
    start = time.perf_counter()
    for _ in range(10):
        x @ w
    return 10 * 2 * 2048 * 384 * 1536 / (time.perf_counter() - start) / 1e9


def _encoding(base: dict[str, list]) -> dict[str, float] | None:  # type: ignore[type-arg]
    try:
        from toolcrib.search.semantic import doc_text
        from toolcrib.search.vectors import MiniLM
    except ImportError:
        return None
    model = MiniLM.packaged()
    texts = [doc_text(d) for docs in base.values() for d in docs]
    model.encode(texts[:8])
    start = time.perf_counter()
    model.encode(texts)
    seconds = time.perf_counter() - start
    tokens = sum(model.token_counts(texts))
    gflops = _matmul_gflops()
    bound = gflops * 1e9 / (_FLOPS_PER_TOKEN * tokens / len(texts))
    return {
        "texts": len(texts),
        "seconds": seconds,
        "texts_per_s": len(texts) / seconds,
        "mean_tokens": tokens / len(texts),
        "matmul_gflops": gflops,
        "bound_texts_per_s": bound,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--no-semantic", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
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
    encoding = None if args.no_semantic else _encoding(base)
    if encoding is not None:
        enc = Table(title="meaning channel: index-time encoding of the real catalog (numpy MiniLM)")
        for column in ("texts", "seconds", "texts/s", "mean tokens", "matmul GFLOP/s", "bound texts/s"):
            enc.add_column(column, justify="right")
        enc.add_row(
            str(encoding["texts"]),
            *(f"{encoding[k]:.1f}" for k in ("seconds", "texts_per_s", "mean_tokens")),
            *(f"{encoding[k]:.0f}" for k in ("matmul_gflops", "bound_texts_per_s")),
        )
        Console().print(enc)
    OUT.mkdir(exist_ok=True)
    report = {"search": results, "encoding": encoding}
    (OUT / "search_speed.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
