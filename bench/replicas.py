"""Calls per second through 1 and 3 gateway replicas on PostgreSQL and 1 on SQLite, same run (#11).

Each setup: a fresh database, the owner, one HTTP connection to the fixture MCP server, N
``toolcrib serve`` processes (words-only search), ``CLIENTS`` concurrent clients sending
``execute_tool`` round-robin over the replicas. Reported: calls/s, p50/p99 latency, and whether the
audit trail holds exactly one ``ok`` row per call (no lost row). The PostgreSQL server is started
by the run itself (tests/pg.py). On a 2-core machine three replicas share the same two cores as
the server, the upstream and the clients: the point is no regression and no lost row, not scaling.

    python bench/replicas.py [--calls 600] [--clients 30]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import (  # noqa: E402 - the repository root is put on the path first
    PG_SECRET_KEY,
    Process,
    cli,
    cli_json,
    start_fixture_http,
    start_gateway,
)
from tests.pg import PostgresServer, read_rows  # noqa: E402

OUT = ROOT / "bench" / "out" / "replicas.json"
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
ENV = {"TOOLCRIB_SEMANTIC": "false", "TOOLCRIB_LOG_LEVEL": "WARNING"}
WARMUP = 30


async def _call(http: httpx2.AsyncClient, base: str, token: str, n: int) -> float:
    call = {"tool": "desk__add_numbers", "arguments": {"a": n, "b": 1}}
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": "execute_tool", "arguments": call},
    }
    start = time.perf_counter()
    response = await http.post(
        base + "/mcp", json=body, headers={**HEADERS, "Authorization": f"Bearer {token}"}
    )
    elapsed = time.perf_counter() - start
    result = response.json()["result"]
    if result.get("isError") or result["structuredContent"] != {"sum": float(n + 1)}:
        raise RuntimeError(f"call {n} failed: {str(result)[:200]}")
    return elapsed


async def _load(bases: list[str], token: str, calls: int, clients: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    limits = httpx2.Limits(max_connections=clients * len(bases), keepalive_expiry=1.0)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        for n in range(WARMUP):
            await _call(http, bases[n % len(bases)], token, n)
        per_client = calls // clients

        async def client(c: int) -> None:
            for i in range(per_client):
                n = c * per_client + i
                latencies.append(await _call(http, bases[n % len(bases)], token, n))

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for c in range(clients):
                tg.start_soon(client, c)
        return time.perf_counter() - start, latencies


def _setup(db_url: str, replicas: int, upstream: Process, logs: Path) -> tuple[str, list[Process]]:
    token = str(cli_json(db_url, "init")["token"])  # type: ignore[index]
    cli(db_url, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream.url)
    started = [start_gateway(db_url, ENV, log_path=logs / f"gw{i}.log") for i in range(replicas)]
    return token, started


def _run(
    label: str, db_url: str, replicas: int, upstream: Process, args: argparse.Namespace
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as logs:
        token, gateways = _setup(db_url, replicas, upstream, Path(logs))
        try:
            elapsed, latencies = anyio.run(_load, [g.url for g in gateways], token, args.calls, args.clients)
        finally:
            for gateway in gateways:
                gateway.stop()
    done = len(latencies)
    rows = read_rows(db_url, "SELECT count(*) FROM audit WHERE outcome = 'ok'")[0][0]
    ordered = sorted(latencies)
    return {
        "setup": label,
        "replicas": replicas,
        "calls": done,
        "calls_per_s": round(done / elapsed, 1),
        "p50_ms": round(ordered[len(ordered) // 2] * 1000, 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 1),
        "audit_ok_rows": rows,
        "no_lost_row": rows == done + WARMUP,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    os.environ["TOOLCRIB_SECRET_KEY"] = PG_SECRET_KEY
    server = PostgresServer.start()
    upstream = start_fixture_http()
    results = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            results.append(_run("SQLite", f"sqlite:///{folder}/bench.db", 1, upstream, args))
            results.append(_run("PostgreSQL", server.create_database(), 1, upstream, args))
            results.append(_run("PostgreSQL", server.create_database(), 3, upstream, args))
    finally:
        upstream.stop()
        server.stop()
    print(f"{os.cpu_count()} cores; {server.version()}; {args.calls} calls, {args.clients} clients")
    heads = ("replicas", "calls/s", "p50 ms", "p99 ms", "audit ok", "no lost row")
    print(f"{'store':<12}" + "".join(f"{h:>12}" for h in heads))
    for r in results:
        print(
            f"{r['setup']:<12}{r['replicas']:>12}{r['calls_per_s']:>12}{r['p50_ms']:>12}{r['p99_ms']:>12}"
            f"{r['audit_ok_rows']:>12}{r['no_lost_row']!s:>12}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figures = {
        "cores": os.cpu_count(),
        "postgres": server.version(),  # "postgres (PostgreSQL) 15.x": the table names the major version
        "calls": args.calls,
        "clients": args.clients,
        "warmup": WARMUP,
        "load_average": [round(x, 1) for x in os.getloadavg()],  # at the end: how shared the cores were
        "results": results,
    }
    args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
