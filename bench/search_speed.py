"""Search speed with meaning on, the whole ``search_tools`` call, against bm25s in the same run.

.venv/bin/python bench/search_speed.py [--sizes 1000,10000] [--rounds 3]

What it measures, in one process, on a real gateway over a SQLite file in a temporary folder:

- catalog indexing throughput: the real 623-tool catalog loaded from the store and indexed
  (search documents, cards, vectors, index) by ``catalogs.sync_from_store``, cold (empty vector
  cache: every tool encoded) and warm (every vector from the store's cache); cold twice, with the
  catalog encoder on every core (the gateway's way) and on one thread (the baseline), with the
  event loop's lag during each;
- the whole ``search_tools`` call (policy, ranking and query encoding in a worker
  thread, cards, handles written to the store) at each size, the catalog grown by cloning its
  accounts, and the index's own ``search`` beside it; bm25s (retrieval only) on the same texts;
- the encoder's onnxruntime threads: 1 against 2, catalog texts per second and one query's time.

- with history (R-5.12): the same ``search_tools`` calls after the index learned ``--history``
  past searches for every tool (synthetic: each a unit vector near its tool's own, from members
  of their own), each query searched with them and without them in turn (the ratio of the two
  p50s, on the same load); and the memory the examples take per 100,000.

Targets from issue #9 (reported, not asserted): p50 <= 25 ms and p99 <= 60 ms at 10k tools;
indexing >= 300 tools/s; issue #23: p50 with 64 past searches per tool <= 1.3x without.
Prints tables and writes bench/out/search_speed.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from rich.console import Console
from rich.table import Table
from sqlalchemy import delete

from _catalog import DATA, OUT, read_jsonl
from toolcrib.catalog.cards import build_card
from toolcrib.catalog.normalize import normalize_catalog
from toolcrib.gateway.connections.catalogs import forget_connection, sync_from_store
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.search import search_tools
from toolcrib.gateway.identity import members
from toolcrib.gateway.process import open_gateway
from toolcrib.policy.classify import classify
from toolcrib.search.semantic import doc_text
from toolcrib.search.usage import PastSearch, UsageChannel
from toolcrib.search.vectors import _TOKENIZER, MiniLM, _model_path
from toolcrib.settings import Settings
from toolcrib.store import connections as conn_store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.store.tables import vectors

Accounts = dict[str, tuple[str, list[dict[str, Any]]]]  # account -> (connector, raw tools)


def _base() -> Accounts:
    accounts: Accounts = {}
    for row in read_jsonl(DATA / "catalog.jsonl"):
        _, tools = accounts.setdefault(row["account"], (row["connector"], []))
        tools.append(
            {
                "name": row["name"],
                "description": row.get("description") or "",
                "inputSchema": row.get("inputSchema") or {"type": "object"},
                "annotations": row.get("annotations") or {},
            }
        )
    return accounts


def _grown(base: Accounts, size: int) -> Accounts:
    """The real catalog cloned under more account names until it holds ``size`` tools."""
    out: Accounts = {}
    total, copy = 0, 0
    while total < size:
        for account, (connector, tools) in base.items():
            take = tools[: size - total]
            out[account if copy == 0 else f"{account}-{copy}"] = (connector, take)
            total += len(take)
            if total >= size:
                break
        copy += 1
    return out


async def _store(gw: Gateway, accounts: Accounts) -> int:
    """Replace every connection in the store by ``accounts`` (normalized and carded as a sync does)."""
    for row in await conn_store.list_connections(gw.store.db):
        await conn_store.delete_connection(gw.store.db, row.name)
    usable = 0
    for account, (connector, tools) in accounts.items():
        await conn_store.insert_connection(gw.store.db, _row(account, connector))
        stored = []
        for record in normalize_catalog(account, connector, tools):
            item = StoredTool(record, None, record.refused)
            if record.refused is None:
                item.card = build_card(record, risk=classify(record.name, record.annotations, None))
                usable += 1
            stored.append(item)
        await conn_store.replace_catalog(gw.store.db, account, stored, status="active", reason=None)
    return usable


def _row(name: str, connector: str) -> ConnectionRow:
    return ConnectionRow(
        name=name,
        connector=connector,
        transport="http",
        command=None,
        url="http://127.0.0.1:9/mcp",  # never called: the benchmark only searches
        secrets=None,
        status="active",
        reason=None,
        tool_count=0,
        catalog_version=0,
    )


async def _index_all(gw: Gateway) -> float:
    """Seconds to index every stored catalog from scratch (what a gateway start does)."""
    for name in list(gw.catalog.connections):
        await forget_connection(gw, name)
    start = time.perf_counter()
    await sync_from_store(gw)
    return time.perf_counter() - start


async def _percentiles(
    run: Callable[[str], Awaitable[object]], queries: list[str], rounds: int
) -> tuple[float, float]:
    await run(queries[0])
    times: list[float] = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            await run(query)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.99 * (len(times) - 1))]


async def _paired(
    gw: Gateway, run: Callable[[str], Awaitable[object]], queries: list[str], rounds: int
) -> dict[str, float]:
    """``search_tools`` with the learned examples and without them, query by query in turn (the
    index's usage channel swapped between the two calls), so that the ratio compares the two on the
    same load: on a shared machine the load drifts between two runs one after the other."""
    index = gw.index._index
    learned, empty = index._usage, UsageChannel()
    await run(queries[0])
    with_times: list[float] = []
    without_times: list[float] = []
    try:
        for _ in range(rounds):
            for query in queries:
                for channel, times in ((learned, with_times), (empty, without_times)):
                    index._usage = channel
                    start = time.perf_counter()
                    await run(query)
                    times.append((time.perf_counter() - start) * 1000)
    finally:
        index._usage = learned
    with_times.sort()
    without_times.sort()
    h50, w50 = statistics.median(with_times), statistics.median(without_times)
    return {
        "p50_ms": h50,
        "p99_ms": with_times[int(0.99 * (len(with_times) - 1))],
        "without_p50_ms": w50,
        "p50_ratio": h50 / w50,
    }


def _bm25s(accounts: Accounts, queries: list[str], rounds: int) -> dict[str, float]:
    corpus = [
        f"{tool['name']} {account} {connector} {tool['description']}"
        for account, (connector, tools) in accounts.items()
        for tool in tools
    ]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    times: list[float] = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
            retriever.retrieve(tokens, k=3, show_progress=False)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p50, p99 = statistics.median(times), times[int(0.99 * (len(times) - 1))]
    return {"p50_ms": p50, "p99_ms": p99}


async def _cold(gw: Gateway, threads: int) -> dict[str, Any]:
    """Index every stored catalog with an empty vector cache, the catalog encoder on ``threads``."""
    async with gw.store.db.begin() as conn:
        await conn.execute(delete(vectors))
    gw.index._threads = threads
    encoded = gw.index.encoded
    done = asyncio.Event()
    probe = asyncio.create_task(_loop_lag(done))
    seconds = await _index_all(gw)
    done.set()
    lags = sorted(await probe)
    return {
        "threads": threads,
        "seconds": seconds,
        "encoded": gw.index.encoded - encoded,
        "loop_lag_p50_ms": statistics.median(lags),
        "loop_lag_p99_ms": lags[int(0.99 * (len(lags) - 1))],
    }


async def _indexing(gw: Gateway, base: Accounts) -> dict[str, Any]:
    tools = await _store(gw, base)
    every_core = gw.index._threads
    baseline = await _cold(gw, 1)
    cold = await _cold(gw, every_core)
    encoded = gw.index.encoded
    warm = await _index_all(gw)
    for run in (baseline, cold):
        run["tools_per_s"] = tools / run["seconds"]
    return {
        "tools": tools,
        "cold_s": cold["seconds"],
        "cold_tools_per_s": tools / cold["seconds"],
        "cold_encoded": cold["encoded"],
        "cold_runs": [baseline, cold],
        "warm_s": warm,
        "warm_tools_per_s": tools / warm,
        "warm_encoded": gw.index.encoded - encoded,
    }


async def _sizes(
    gw: Gateway, base: Accounts, sizes: list[int], queries: list[str], rounds: int, history: int
) -> list[Any]:
    _, token = await members.init_owner(gw.store, "owner")
    principal = await gw.bearers.authenticate(token)
    results = []
    for size in sizes:
        accounts = _grown(base, size)
        tools = await _store(gw, accounts)
        build = await _index_all(gw)

        async def whole(query: str) -> object:
            return await search_tools(gw, principal, query, 3)

        async def index_only(query: str) -> object:
            return await gw.index.search(query, limit=3, visible=lambda _: True, withheld=lambda _: False)

        p50, p99 = await _percentiles(whole, queries, rounds)
        i50, i99 = await _percentiles(index_only, queries, rounds)
        learned = await _learn(gw, history) if history else None
        paired = await _paired(gw, whole, queries, rounds) if history else None
        await gw.index.forget()
        results.append(
            {
                "tools": tools,
                "index_build_warm_s": build,
                "search_tools": {"p50_ms": p50, "p99_ms": p99},
                "index_search": {"p50_ms": i50, "p99_ms": i99},
                "bm25s": _bm25s(accounts, queries, rounds),
                "with_history": {"per_tool": history, **(paired or {}), **(learned or {})},
            }
        )
    return results


async def _learn(gw: Gateway, per_tool: int) -> dict[str, Any]:
    """Teach the live index ``per_tool`` past searches for every tool: unit vectors near the tool's
    own (its vector plus noise), each from a member of its own. Returns the examples held and the
    memory they take."""
    rng = np.random.default_rng(23)
    index = gw.index._index
    names = [doc.public_name for doc in index._docs if doc is not None]
    assert index._meaning is not None
    rows = index._meaning._rows
    now = time.time()
    for name in names:
        base = rows[index._slot_of[name]].astype(np.float64)
        noise = rng.normal(size=(per_tool, base.shape[0])) * 0.04
        vectors = base + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        past = [PastSearch(v.astype(np.float32), f"m{i}", now - i * 3600.0) for i, v in enumerate(vectors)]
        await gw.index.learn(name, past, now)
    held = gw.index.examples
    nbytes = index._usage.nbytes()
    return {"examples": held, "bytes": nbytes, "bytes_per_100k": nbytes * 100_000 / max(held, 1)}


async def _loop_lag(done: asyncio.Event) -> list[float]:
    """How late a 10 ms sleep on the event loop wakes up, in ms, until ``done``: what every other
    request of the gateway would wait while the encoder runs in a worker thread."""
    lags = []
    while not done.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append((time.perf_counter() - start - 0.01) * 1000)
    return lags


async def _threads(base: Accounts, queries: list[str]) -> list[dict[str, float]]:
    from toolcrib.search.index import SearchDoc

    texts = [
        doc_text(SearchDoc(f"{a}__{t['name']}", a, c, t["name"], t["description"]))
        for a, (c, tools) in base.items()
        for t in tools
    ]
    out = []
    for threads in (1, 2):
        model = MiniLM(_model_path(), _TOKENIZER, threads=threads)
        model.encode(texts[:8])
        done = asyncio.Event()
        probe = asyncio.create_task(_loop_lag(done))
        start = time.perf_counter()
        await asyncio.to_thread(model.encode, texts)
        seconds = time.perf_counter() - start
        done.set()
        lags = sorted(await probe)
        times = []
        for query in queries:
            began = time.perf_counter()
            model.encode([query])
            times.append((time.perf_counter() - began) * 1000)
        out.append(
            {
                "threads": threads,
                "texts_per_s": len(texts) / seconds,
                "loop_lag_p50_ms": statistics.median(lags),
                "loop_lag_p99_ms": lags[int(0.99 * (len(lags) - 1))],
                "query_p50_ms": statistics.median(times),
                "query_p99_ms": sorted(times)[int(0.99 * (len(times) - 1))],
            }
        )
    return out


async def _run(sizes: list[int], rounds: int, history: int) -> dict[str, Any]:
    queries = [row["query"] for row in read_jsonl(DATA / "intents_dev.jsonl")]
    base = _base()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{Path(folder) / 'bench.db'}", semantic=True)
        async with open_gateway(settings) as gw:
            if not gw.meaning.up:
                raise SystemExit(f"meaning search is down: {gw.meaning.reason}")
            indexing = await _indexing(gw, base)
            search = await _sizes(gw, base, sizes, queries, rounds, history)
    return {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "indexing": indexing,
        "search": search,
        "encoder_threads": await _threads(base, queries),
    }


def _print(report: dict[str, Any]) -> None:
    console = Console()
    idx = report["indexing"]
    table = Table(title=f"catalog indexing ({idx['tools']} tools, store -> index, encoding included)")
    for column in (
        "cache",
        "encoder threads",
        "seconds",
        "tools/s",
        "tools encoded",
        "loop lag p50 / p99 ms",
    ):
        table.add_column(column, justify="right")
    for run in idx["cold_runs"]:
        lag = f"{run['loop_lag_p50_ms']:.1f} / {run['loop_lag_p99_ms']:.1f}"
        cells = (f"{run['seconds']:.1f}", f"{run['tools_per_s']:.0f}", str(run["encoded"]), lag)
        table.add_row("cold", str(run["threads"]), *cells)
    table.add_row(
        "warm", "-", f"{idx['warm_s']:.1f}", f"{idx['warm_tools_per_s']:.0f}", str(idx["warm_encoded"]), "-"
    )
    console.print(table)
    table = Table(title="search latency, meaning on (intents_dev queries, limit 3), ms")
    columns = ("tools", "search_tools p50", "p99", "index.search p50", "p99", "bm25s p50", "p99", "build s")
    for column in columns:
        table.add_column(column, justify="right")
    for r in report["search"]:
        cells = [r[k][p] for k in ("search_tools", "index_search", "bm25s") for p in ("p50_ms", "p99_ms")]
        table.add_row(str(r["tools"]), *(f"{c:.1f}" for c in cells), f"{r['index_build_warm_s']:.1f}")
    console.print(table)
    table = Table(title="search_tools with history (R-5.12): past searches per tool learned, same run")
    for column in ("tools", "per tool", "examples", "p50 ms", "p99 ms", "p50 / without", "MB per 100k"):
        table.add_column(column, justify="right")
    for r in report["search"]:
        h = r["with_history"]
        if h["p50_ratio"] is None:
            continue
        table.add_row(
            str(r["tools"]),
            str(h["per_tool"]),
            str(h["examples"]),
            f"{h['p50_ms']:.1f}",
            f"{h['p99_ms']:.1f}",
            f"{h['p50_ratio']:.2f}x",
            f"{h['bytes_per_100k'] / 1e6:.0f}",
        )
    console.print(table)
    table = Table(title="encoder onnxruntime threads (the catalog's texts in a worker thread; one query)")
    keys = ("texts_per_s", "loop_lag_p50_ms", "loop_lag_p99_ms", "query_p50_ms", "query_p99_ms")
    for column in ("threads", "texts/s", "loop lag p50 ms", "p99 ms", "query p50 ms", "p99 ms"):
        table.add_column(column, justify="right")
    for r in report["encoder_threads"]:
        table.add_row(str(r["threads"]), *(f"{r[k]:.1f}" for k in keys))
    console.print(table)
    console.print(f"cpus {report['cpus']}, load average {report['load_average']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=64, help="past searches per tool (0: skip)")
    args = parser.parse_args()
    report = asyncio.run(_run([int(s) for s in args.sizes.split(",")], args.rounds, args.history))
    _print(report)
    OUT.mkdir(exist_ok=True)
    (OUT / "search_speed.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
