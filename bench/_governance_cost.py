"""What governance costs on the hot path (#21, #22): ``bench/overhead.py --governance``.

One ``toolcrib serve`` per store (SQLite; PostgreSQL with ``--postgres``, started by the run as in
``bench/replicas.py``), the fixture server connected twice over HTTP: ``desk`` with pinning off,
``pinned`` with its definitions pinned (R-13.4, the default). Each round runs ``--calls``
sequential ``execute_tool`` calls by handle in three ways, one after the other:

- **baseline**: a personal access token, ``desk`` (no pins), no rate limit;
- **limit + pins**: the same token, ``pinned``, under a limit that matches every call and never
  refuses (every member, 10^9 per minute, set and removed through the running gateway's own
  control plane, so it applies at once; R-7.10);
- **OAuth grant**: an access token of toolcrib's own authorization server (R-7.7), got through the
  real pages (registration, PKCE, sign-in with the personal token, consent, code exchange), ``desk``.

The p50 of each, their medians over the rounds, and the ratios to the baseline, in the same run;
and the limit's check alone (rule matching and the bucket), in process, which a loaded machine's
noise does not drown.
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


async def governance_rows(args: Any, tmp: Path) -> dict[str, Any]:
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
    add = ["connections", "add", "--connector", "Helpdesk", "--url", upstream]
    overhead._cli(db, *add[:2], "desk", *add[2:], "--no-pinning")
    overhead._cli(db, *add[:2], "pinned", *add[2:])
    gateway, base = _start_gateway(
        db, tmp / f"governance-{'sqlite' if db.startswith('sqlite') else 'pg'}.log"
    )
    try:
        oauth = await _oauth_access_token(base, token)
        actions = {
            "plain": await overhead._handle(base, token, "echo a message back", "desk__echo_message"),
            "pinned": await overhead._handle(base, token, "echo a message back", "pinned__echo_message"),
            "oauth": await overhead._handle(base, oauth, "echo a message back", "desk__echo_message"),
        }
        return await _rounds(base, token, oauth, actions, calls)
    finally:
        stop(gateway)


async def _oauth_access_token(base: str, token: str) -> str:
    """An access token of the gateway's own authorization server, through its real pages: a
    registered client, PKCE, the person signing in with ``token`` and consenting, the exchange."""
    import httpx2
    from tests.e2e.oauth_person import REDIRECT, Person, authorize_url, pkce, query_of, register

    verifier, challenge = pkce()
    async with Person(base, token) as person:
        client = await register(person.http, base)
        back = await person.authorize(
            authorize_url(base, client["client_id"], challenge, resource=base + "/mcp")
        )
        code = query_of(back.headers["location"])["code"]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "client_id": client["client_id"],
        "resource": base + "/mcp",
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        issued = await http.post(base + "/token", data=form)
    issued.raise_for_status()
    return str(issued.json()["access_token"])


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


async def _rounds(base: str, token: str, oauth: str, actions: dict[str, str], calls: int) -> dict[str, Any]:
    """Each round: the baseline, then limit + pins, then the OAuth grant; the medians of their p50s."""
    import overhead

    p50s: dict[str, list[float]] = {"baseline": [], "limit_and_pins": [], "oauth": []}
    async with (
        overhead._http_client(base + "/mcp", token) as client,
        overhead._http_client(base + "/mcp", oauth) as oauth_client,
    ):

        def caller(session: Any, action: str) -> Any:
            arguments = {"action_id": action, "arguments": {"message": "hi"}}

            async def call() -> Any:
                return overhead._checked(await session.call_tool("execute_tool", arguments))

            return call

        for _ in range(ROUNDS):
            p50s["baseline"].append(
                (await overhead._sequential(caller(client, actions["plain"]), calls))["p50_ms"]
            )
            rule = overhead._checked(await client.call_tool("toolcrib__limits__set", NEVER_REFUSES))
            limited = caller(client, actions["pinned"])
            p50s["limit_and_pins"].append((await overhead._sequential(limited, calls))["p50_ms"])
            rule_id = rule.structured_content["result"]["id"]
            overhead._checked(await client.call_tool("toolcrib__limits__remove", {"id": rule_id}))
            granted = caller(oauth_client, actions["oauth"])
            p50s["oauth"].append((await overhead._sequential(granted, calls))["p50_ms"])
    medians = {name: statistics.median(values) for name, values in p50s.items()}
    return {
        **{f"p50_ms_{name}": round(value, 3) for name, value in medians.items()},
        "ratio_limit_and_pins": round(medians["limit_and_pins"] / medians["baseline"], 3),
        "ratio_oauth": round(medians["oauth"] / medians["baseline"], 3),
        "rounds": p50s,
        "calls_per_half": calls,
    }


async def _check_alone(db_url: str, calls: int = 2_000) -> dict[str, Any]:
    """The check by itself, in process: matching one rule and spending from its bucket (the
    dictionary on SQLite, the one statement on PostgreSQL), p50 and p90 in microseconds."""
    import time

    from toolcrib.gateway.governance.buckets import buckets_for
    from toolcrib.policy.rate_limits import LimitRule, spends
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
        "| store | baseline p50 (token, no pins, no limit) | limit + pins | × | OAuth grant | × "
        "| limit check alone p50 / p90 |",
        "|---|---|---|---|---|---|---|",
    ]
    for store, r in rows.items():
        if "skipped" in r:
            lines.append(f"| {store} | {r['skipped']} | | | | | |")
            continue
        lines.append(
            f"| {store} | {r['p50_ms_baseline']} ms "
            f"| {r['p50_ms_limit_and_pins']} ms | {r['ratio_limit_and_pins']} "
            f"| {r['p50_ms_oauth']} ms | {r['ratio_oauth']} "
            f"| {r['check_alone_p50_us']} / {r['check_alone_p90_us']} us |"
        )
    return "\n".join(lines)
