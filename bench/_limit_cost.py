"""What a rate limit costs on the hot path (R-7.10, #21): ``bench/overhead.py --limits``.

One ``toolcrib serve`` per store (SQLite; PostgreSQL with ``--postgres``, started by the run as in
``bench/replicas.py``), one HTTP connection to the fixture server, one client session calling
``execute_tool`` by handle. Rounds alternate: ``--calls`` sequential calls with no limit, then as
many with a limit that matches every call and never refuses (every member, 10^9 per minute, set and
removed through the running gateway's own control plane, so it applies at once). The p50 of each
half, their medians over the rounds, and the ratio, measured in the same run; and the check alone
(rule matching and the bucket), in process, which a loaded machine's noise does not drown.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from _procs import free_port, stop, wait_http

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NEVER_REFUSES = {"per_minute": 1_000_000_000}
ROUNDS = 3


async def limit_rows(args: Any, tmp: Path) -> dict[str, Any]:
    """The figures per store: ``{"sqlite": {...}, "postgresql": {...} | {"skipped": why}}``."""
    from tests.conftest import PG_SECRET_KEY

    import overhead

    os.environ["TOOLCRIB_SECRET_KEY"] = PG_SECRET_KEY  # one explicit key, as replicas need
    fixture, upstream = overhead._start_fixture()
    try:
        sqlite = f"sqlite:///{tmp / 'limits.db'}"
        out = {"sqlite": {**await _store(sqlite, upstream, args.calls, tmp), **await _check_alone(sqlite)}}
        if not args.postgres:
            out["postgresql"] = {"skipped": "run with --postgres"}
            return out
        from tests.pg import PostgresServer

        server = PostgresServer.start()
        try:
            url = server.create_database()
            out["postgresql"] = {**await _store(url, upstream, args.calls, tmp), **await _check_alone(url)}
        finally:
            server.stop()
        return out
    finally:
        stop(fixture)


async def _store(db: str, upstream: str, calls: int, tmp: Path) -> dict[str, Any]:
    import overhead

    token = overhead._cli(db, "init")["token"]
    overhead._cli(db, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream)
    gateway, base = _start_gateway(db, tmp / f"limits-{'sqlite' if db.startswith('sqlite') else 'pg'}.log")
    try:
        action = await overhead._handle(base, token, "echo a message back", "desk__echo_message")
        return await _rounds(base, token, action, calls)
    finally:
        stop(gateway)


def _start_gateway(db: str, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    import overhead

    port = free_port()
    env = {**overhead._env(), "TOOLCRIB_LOG_LEVEL": "WARNING", "TOOLCRIB_SEMANTIC": "false"}
    cmd = [sys.executable, "-m", "toolcrib.cli", "serve", "--port", str(port), "--database", db]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/healthz", proc)
    return proc, base


async def _rounds(base: str, token: str, action: str, calls: int) -> dict[str, Any]:
    """Alternate halves without and with the limit; the medians of their p50s."""
    import overhead

    off: list[float] = []
    on: list[float] = []
    async with overhead._http_client(base + "/mcp", token) as client:
        arguments = {"action_id": action, "arguments": {"message": "hi"}}

        async def call() -> Any:
            return overhead._checked(await client.call_tool("execute_tool", arguments))

        for _ in range(ROUNDS):
            off.append((await overhead._sequential(call, calls))["p50_ms"])
            rule = overhead._checked(await client.call_tool("toolcrib__limits__set", NEVER_REFUSES))
            on.append((await overhead._sequential(call, calls))["p50_ms"])
            rule_id = rule.structured_content["result"]["id"]
            overhead._checked(await client.call_tool("toolcrib__limits__remove", {"id": rule_id}))
    p50_off, p50_on = statistics.median(off), statistics.median(on)
    return {
        "p50_ms_without_limit": round(p50_off, 3),
        "p50_ms_with_limit": round(p50_on, 3),
        "ratio": round(p50_on / p50_off, 3),
        "rounds_without": off,
        "rounds_with": on,
        "calls_per_half": calls,
    }


async def _check_alone(db_url: str, calls: int = 2_000) -> dict[str, Any]:
    """The check by itself, in process: matching one rule and spending from its bucket (the
    dictionary on SQLite, the one statement on PostgreSQL), p50 and p90 in microseconds."""
    import time

    from toolcrib.gateway.buckets import buckets_for
    from toolcrib.policy.limits import LimitRule, spends
    from toolcrib.store.database import Database

    db = Database(db_url)
    try:
        await db.migrate()
        buckets, rules = buckets_for(db), [LimitRule("rul_bench", per_minute=1_000_000_000)]
        samples = []
        for n in range(calls + 50):
            t0 = time.perf_counter()
            wanted = spends(rules, member="owner", role="owner", account="desk", tool="echo_message")
            assert await buckets.take(wanted, time.time()) is None
            if n >= 50:  # warm-up
                samples.append(time.perf_counter() - t0)
    finally:
        await db.close()
    samples.sort()
    return {
        "check_alone_p50_us": round(samples[len(samples) // 2] * 1e6, 1),
        "check_alone_p90_us": round(samples[int(0.9 * len(samples))] * 1e6, 1),
    }


def table(rows: dict[str, Any]) -> str:
    lines = [
        "| store | execute_tool p50, no limit | with a limit that matches | ratio | check alone p50 / p90 |",
        "|---|---|---|---|---|",
    ]
    for store, r in rows.items():
        if "skipped" in r:
            lines.append(f"| {store} | {r['skipped']} | | |")
            continue
        lines.append(
            f"| {store} | {r['p50_ms_without_limit']} ms | {r['p50_ms_with_limit']} ms | {r['ratio']} "
            f"| {r['check_alone_p50_us']} / {r['check_alone_p90_us']} us |"
        )
    return "\n".join(lines)
