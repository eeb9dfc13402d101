"""The cost of the gateway on the hot path: a direct MCP session against ``execute_tool`` (#12).

Same run, same machine, loopback only:

- HTTP: an SDK client straight to the fixture server (``--http PORT``, tool ``echo_message``)
  against the same call through a real ``toolcrib serve`` subprocess, ``execute_tool`` by handle;
- the floor: the same direct client through a bare forwarder (``bench/_forwarder.py``: uvicorn and
  one httpx2 client, no SDK, no database), what any gateway on this Python stack costs at least;
- sequential p50/p90/p99 over ``--calls`` calls; throughput of 16 and 64 clients for
  ``--seconds`` each; the gateway's CPU (utime+stime from /proc) per call; errors; the exact audit
  row count after the concurrent runs; a 50 clients x 20 calls burst (1,000 rows, 0 errors);
- stdio: ``mcp-server-time`` in a direct SDK stdio session against the same through the gateway;
- start-up: ``toolcrib serve`` to ``/healthz`` 200 with two connections and idle RSS, on the first
  start of a new organization (its tool vectors encoded) and on restarts (the model loads lazily).

- ``--governance`` (alone): what a rate limit with pinned definitions, and an OAuth grant of the
  gateway's own authorization server, cost ``execute_tool`` against a personal token with neither
  (``bench/_governance_cost.py``), on SQLite and, with ``--postgres``, on PostgreSQL.
- ``--audit-stream`` (alone): what the audit stream costs ``execute_tool``: a webhook sink (a local
  receiver) on against no sink, same run (``bench/_stream_cost.py``); every event must arrive.

- ``--resources`` (alone): ``resources/read`` of a connection's resource straight to its server
  and through the gateway, beside ``echo_message`` straight and as ``execute_tool``, interleaved in
  the same run, p50 and ratios (``bench/_resource_read.py``, #34).
- ``--tracing`` (alone): ``execute_tool`` with traces exported over OTLP/HTTP to a local receiver
  against the same gateway without ``OTEL_*`` variables, p50 ratio (``bench/_tracing_cost.py``).

- ContextForge, when ``TOOLCRIB_BENCH_CONTEXTFORGE_VENV`` names a venv that holds it
  (``bench/_contextforge.py``: 1.1.0 on Python 3.12, or 1.0.7): its stateful and its stateless
  mode on the same upstream, sequential and 16 clients, its CPU per call (its forked workers
  included), start-up and idle memory, with its version and Python in the table and the JSON.
  Without the variable the table and the JSON say there is no such row and why; with it set, a
  ContextForge that cannot be started fails the bench (exit 1, the reason and the redacted tail of
  its output), checked before the other runs where it can be.

    PYTHONPATH=src python bench/overhead.py [--calls 300] [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import _contextforge as contextforge
from _procs import cpu_seconds, free_port, rss_mb, stop, tree_cpu_seconds, wait_http

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "overhead.json"
PYTHON = sys.executable
Call = Callable[[], Awaitable[Any]]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def _cli(db: str, *args: str) -> Any:
    out = subprocess.run(
        [PYTHON, "-m", "toolcrib.cli", *args, "--database", db, "--json"],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


# --- clients -------------------------------------------------------------------------------------


@asynccontextmanager
async def _http_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx2.Limits(max_connections=200, max_keepalive_connections=200)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, limits=limits) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


def _checked(result: Any) -> Any:
    if result.is_error:
        raise RuntimeError(str(result.content)[:300])
    return result


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {"p50_ms": at(0.50), "p90_ms": at(0.90), "p99_ms": at(0.99), "n": len(ordered)}


async def _sequential(call: Call, calls: int) -> dict[str, float]:
    for _ in range(10):  # warm-up
        await call()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t0)
    return _percentiles(samples)


async def _concurrent(calls: list[Call], *, seconds: float | None, each: int | None) -> dict[str, Any]:
    """Every client calls in a loop for ``seconds`` (or ``each`` times); latencies and errors."""
    samples: list[float] = []
    errors = 0
    end = time.monotonic() + (seconds or 0)

    async def client(call: Call) -> None:
        nonlocal errors
        done = 0
        while (each is not None and done < each) or (each is None and time.monotonic() < end):
            t0 = time.perf_counter()
            try:
                await call()
            except Exception:
                errors += 1
            samples.append(time.perf_counter() - t0)
            done += 1

    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(client, call)
    elapsed = time.monotonic() - t0
    return {
        "clients": len(calls),
        "calls": len(samples),
        "errors": errors,
        "seconds": round(elapsed, 2),
        "calls_per_s": round(len(samples) / elapsed, 1),
        **_percentiles(samples or [0.0]),
    }


# --- one side ------------------------------------------------------------------------------------


_PHASES = ((16, True, None), (64, True, None), (50, False, 20))
"""Concurrent phases: clients, whether timed (``--seconds``), else how many calls each makes."""


async def _side(
    open_call: Callable[[], Any],
    args: argparse.Namespace,
    pid: int | None,
    rows: Callable[[], int] | None,
    clients: tuple[int, ...] = (16, 64, 50),
    cpu: Callable[[int], float] = cpu_seconds,
) -> dict[str, Any]:
    """Sequential, then the concurrent phases named in ``clients`` (16 and 64 clients for
    ``--seconds``, 50 x 20 calls), each client with a session of its own; ``cpu`` reads the
    gateway's CPU seconds (``tree_cpu_seconds`` for one that forks workers)."""
    out: dict[str, Any] = {}
    async with open_call() as call, _profiled(args, pid, "sequential"):
        cpu0 = cpu(pid) if pid else 0.0
        out["sequential"] = await _sequential(call, args.calls)
        if pid:
            out["sequential"]["gateway_cpu_ms_per_call"] = round(
                (cpu(pid) - cpu0) * 1000 / (args.calls + 10), 2
            )
    for n, timed, each in (phase for phase in _PHASES if phase[0] in clients):
        seconds = args.seconds if timed else None
        async with _many(open_call, n) as calls, _profiled(args, pid if n == 16 else None, "c16"):
            before = rows() if rows else 0
            cpu0 = cpu(pid) if pid else 0.0
            run = await _concurrent(calls, seconds=seconds, each=each)
            if pid:
                run["gateway_cpu_ms_per_call"] = round((cpu(pid) - cpu0) * 1000 / run["calls"], 2)
            if rows:
                run["audit_rows"] = rows() - before
        out[f"clients_{n}" if each is None else "burst_50x20"] = run
    return out


@asynccontextmanager
async def _profiled(args: argparse.Namespace, pid: int | None, name: str) -> AsyncIterator[None]:
    """With ``--profile DIR``, py-spy samples the gateway (``pid``) meanwhile, into DIR/name.txt."""
    if args.profile is None or pid is None:
        yield
        return
    args.profile.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy") or str(Path(PYTHON).parent / "py-spy")
    out = args.profile / f"{name}.txt"
    cmd = [spy, "record", "-p", str(pid), "-f", "raw", "-o", str(out), "-r", "200", "--threads"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    try:
        await anyio.sleep(0.5)
        yield
    finally:
        proc.send_signal(2)
        proc.wait(30)


@asynccontextmanager
async def _many(open_call: Callable[[], Any], n: int) -> AsyncIterator[list[Call]]:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_call()) for _ in range(n)]


def _direct_http(url: str, token: str | None = None, tool: str = "echo_message") -> Callable[[], Any]:
    """Sessions that call the upstream's echo tool at ``url`` (straight, or through a forwarder or
    another gateway that names it ``tool``)."""

    @asynccontextmanager
    async def open_call() -> AsyncIterator[Call]:
        async with _http_client(url, token) as client:
            yield lambda: _call(client, tool, {"message": "hello"})

    return open_call


def _through_gateway(base: str, token: str, handle: str, arguments: dict[str, Any]) -> Callable[[], Any]:
    @asynccontextmanager
    async def open_call() -> AsyncIterator[Call]:
        async with _http_client(base + "/mcp", token) as client:
            yield lambda: _call(client, "execute_tool", {"action_id": handle, "arguments": arguments})

    return open_call


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    return _checked(await client.call_tool(name, arguments))


async def _handle(base: str, token: str, query: str, tool: str) -> str:
    async with _http_client(base + "/mcp", token) as client:
        found = (await client.call_tool("search_tools", {"query": query, "limit": 5})).structured_content
    assert isinstance(found, dict), found
    for card in found.get("results", []):
        if card["name"] == tool:
            return str(card["action_id"])
    raise RuntimeError(f"{tool} not found by search: {found}")


# --- the run -------------------------------------------------------------------------------------


def _start_fixture() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [PYTHON, "-m", "tests.fixtures.fixture_server", "--http", str(port)]
    quiet = subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=quiet, stderr=quiet)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, ok=False)
    except BaseException:
        stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}/mcp"


def _start_forwarder(upstream: str) -> tuple[subprocess.Popen[bytes], str]:
    """The floor (bench/_forwarder.py): a bare uvicorn + httpx2 forwarder to ``upstream``."""
    port = free_port()
    cmd = [PYTHON, str(ROOT / "bench" / "_forwarder.py"), "--port", str(port), "--upstream", upstream]
    quiet = subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=quiet, stderr=quiet)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    except BaseException:
        stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}/mcp"


def _time_server() -> list[str]:
    found = shutil.which("mcp-server-time") or str(Path(PYTHON).parent / "mcp-server-time")
    return [found]


def _start_gateway(db: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    log = open(Path(db.removeprefix("sqlite:///")).with_suffix(".log"), "ab")  # noqa: SIM115
    cmd = [PYTHON, "-m", "toolcrib.cli", "serve", "--port", str(port), "--database", db]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**_env(), **env}, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    return proc, base, wait_http(base + "/healthz", proc)


async def _stdio_rows(base: str, token: str, calls: int) -> dict[str, Any]:
    params = StdioServerParameters(command=_time_server()[0], args=[])
    arguments = {"timezone": "UTC"}

    @asynccontextmanager
    async def direct() -> AsyncIterator[Call]:
        async with Client(stdio_client(params), cache=None) as client:
            yield lambda: _call(client, "get_current_time", arguments)

    handle = await _handle(base, token, "current time in a timezone", "clock__get_current_time")
    out: dict[str, Any] = {}
    async with direct() as call:
        out["direct"] = await _sequential(call, calls)
    async with _through_gateway(base, token, handle, arguments)() as call:
        out["toolcrib"] = await _sequential(call, calls)
    out["ratio_p50"] = round(out["toolcrib"]["p50_ms"] / out["direct"]["p50_ms"], 2)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if contextforge.skipped() is None:
        contextforge.check()  # a venv without ContextForge fails now, not after the other runs
    tmp = Path(tempfile.mkdtemp(prefix="tc-overhead-"))
    db = f"sqlite:///{tmp / 'toolcrib.db'}"
    fixture, upstream = _start_fixture()
    gateway: subprocess.Popen[bytes] | None = None
    try:
        token = _cli(db, "init")["token"]
        _cli(db, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream)
        _cli(db, "connections", "add", "clock", "--connector", "Time", "--command", " ".join(_time_server()))
        gateway, base, report = _start_and_restart(db)
        handle = await _handle(base, token, "echo a message back", "desk__echo_message")
        report["startup"]["rss_after_first_search_mb"] = round(rss_mb(gateway.pid), 1)
        path = db.removeprefix("sqlite:///")

        def rows() -> int:
            with sqlite3.connect(path) as conn:
                return int(conn.execute("SELECT count(*) FROM audit").fetchone()[0])

        report["direct"] = await _side(_direct_http(upstream), args, None, None)
        floor, floor_url = _start_forwarder(upstream)
        try:
            report["floor"] = await _side(_direct_http(floor_url), args, floor.pid, None, clients=(16,))
        finally:
            stop(floor)
        through = _through_gateway(base, token, handle, {"message": "hello"})
        report["toolcrib"] = await _side(through, args, gateway.pid, rows)
        report["startup"]["rss_after_load_mb"] = round(rss_mb(gateway.pid), 1)
        report["stdio"] = await _stdio_rows(base, token, min(args.calls, 200))
        report["contextforge"] = await _contextforge_rows(upstream, args)
        report["ratios"] = _ratios(report)
        return report
    finally:
        if gateway is not None:
            stop(gateway)
        stop(fixture)
        shutil.rmtree(tmp, ignore_errors=True)


def _start_and_restart(db: str, restarts: int = 3) -> tuple[subprocess.Popen[bytes], str, dict[str, Any]]:
    """The first start of a new organization (its tool vectors encoded: the model loads), then
    ``restarts`` restarts on the same database (every vector cached: the model loads lazily at the
    first search). Returns the last gateway, running, and the start-up figures of both."""
    env = {"TOOLCRIB_LOG_LEVEL": "WARNING"}
    gateway, _, first = _start_gateway(db, env)
    first_rss = rss_mb(gateway.pid)
    stop(gateway)
    times, sizes = [], []
    for attempt in range(restarts):
        gateway, base, ready = _start_gateway(db, env)
        times.append(ready)
        sizes.append(rss_mb(gateway.pid))
        if attempt < restarts - 1:
            stop(gateway)
    startup = {
        "first_start_healthz_s": round(first, 2),
        "first_start_rss_mb": round(first_rss, 1),
        "healthz_s": round(statistics.median(times), 2),
        "healthz_s_runs": [round(t, 2) for t in times],
        "rss_idle_mb": round(statistics.median(sizes), 1),
    }
    return gateway, base, {"startup": startup}


async def _contextforge_rows(upstream: str, args: argparse.Namespace) -> dict[str, Any]:
    """ContextForge in both of its session modes on the same upstream, sequential and 16 clients
    (``bench/_contextforge.py``), or why there are no such rows (only when the venv is not named:
    one that is named and fails raises ``contextforge.Unavailable``)."""
    why = contextforge.skipped()
    if why is not None:
        return {"skipped": why}
    out: dict[str, Any] = {}
    for mode in ("stateful", "stateless"):
        with contextforge.running(upstream, stateful=mode == "stateful") as cf:
            direct = _direct_http(cf.url, cf.token, cf.tool)
            side = await _side(direct, args, cf.pid, None, clients=(16,), cpu=tree_cpu_seconds)
            out[mode] = {
                "version": cf.version,
                "python": cf.python,
                "healthz_s": cf.healthz_s,
                "rss_idle_mb": cf.rss_idle_mb,
                "processes": cf.processes,
                "pss_idle_tree_mb": cf.pss_idle_tree_mb,
                **side,
            }
    return out


def _ratios(r: dict[str, Any]) -> dict[str, float]:
    d, t = r["direct"], r["toolcrib"]
    f = r["floor"]
    return {
        "p50_sequential": round(t["sequential"]["p50_ms"] / d["sequential"]["p50_ms"], 2),
        "floor_p50_sequential": round(f["sequential"]["p50_ms"] / d["sequential"]["p50_ms"], 2),
        "floor_throughput_16": round(f["clients_16"]["calls_per_s"] / d["clients_16"]["calls_per_s"], 2),
        "throughput_16": round(t["clients_16"]["calls_per_s"] / d["clients_16"]["calls_per_s"], 2),
        "throughput_64": round(t["clients_64"]["calls_per_s"] / d["clients_64"]["calls_per_s"], 2),
        "burst_p99_over_p50": round(t["burst_50x20"]["p99_ms"] / t["burst_50x20"]["p50_ms"], 2),
        **{
            f"contextforge_{mode}_{name}": round(c[key][field] / d[key][field], 2)
            for mode, c in r["contextforge"].items()
            if mode != "skipped"
            for name, key, field in (
                ("p50_sequential", "sequential", "p50_ms"),
                ("throughput_16", "clients_16", "calls_per_s"),
            )
        },
    }


def table(r: dict[str, Any]) -> str:
    d, t = r["direct"], r["toolcrib"]
    lines = [
        "| | p50 | p90 | p99 | calls/s 16 | calls/s 64 | CPU ms/call (seq / 16) | errors | audit rows |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, side in (("direct", d), ("toolcrib execute_tool (handle)", t)):
        s, c16, c64 = side["sequential"], side["clients_16"], side["clients_64"]
        cpu = f"{s.get('gateway_cpu_ms_per_call', '-')} / {c16.get('gateway_cpu_ms_per_call', '-')}"
        errors = c16["errors"] + c64["errors"] + side["burst_50x20"]["errors"]
        rows = f"{c16.get('audit_rows', '-')} / {c16['calls']}" if "audit_rows" in c16 else "-"
        lines.append(
            f"| {name} | {s['p50_ms']} | {s['p90_ms']} | {s['p99_ms']} | {c16['calls_per_s']} "
            f"| {c64['calls_per_s']} | {cpu} | {errors} | {rows} |"
        )
        if name == "direct":
            f = r["floor"]
            fs, f16 = f["sequential"], f["clients_16"]
            lines.append(
                f"| floor: bare forwarder (uvicorn + httpx2, no SDK, no database) | {fs['p50_ms']} "
                f"| {fs['p90_ms']} | {fs['p99_ms']} | {f16['calls_per_s']} | - "
                f"| {fs['gateway_cpu_ms_per_call']} / {f16['gateway_cpu_ms_per_call']} "
                f"| {f16['errors']} | - |"
            )
    for mode, c in r["contextforge"].items():
        if mode == "skipped":
            continue
        s, c16 = c["sequential"], c["clients_16"]
        lines.append(
            f"| ContextForge {c['version']} (Python {c['python']}) {mode} "
            f"| {s['p50_ms']} | {s['p90_ms']} | {s['p99_ms']} "
            f"| {c16['calls_per_s']} | - | {s['gateway_cpu_ms_per_call']} / {c16['gateway_cpu_ms_per_call']} "
            f"| {c16['errors']} | - |"
        )
    b, st = t["burst_50x20"], r["startup"]
    lines += [
        "",
        f"50 x 20 through toolcrib: {b['calls']} calls, {b['errors']} errors, "
        f"{b.get('audit_rows')} audit rows, p50 {b['p50_ms']} ms, p99 {b['p99_ms']} ms",
        f"stdio (mcp-server-time) p50: direct {r['stdio']['direct']['p50_ms']} ms, toolcrib "
        f"{r['stdio']['toolcrib']['p50_ms']} ms ({r['stdio']['ratio_p50']}x)",
        f"start-up to /healthz, restart on the same database (median of 3): {st['healthz_s']} s; RSS idle "
        f"{st['rss_idle_mb']} MB (model not loaded), after the first search "
        f"{st['rss_after_first_search_mb']} MB, "
        f"after the run {st['rss_after_load_mb']} MB",
        f"first start of a new organization (tool vectors encoded, model loaded): "
        f"{st['first_start_healthz_s']} s, RSS {st['first_start_rss_mb']} MB",
        f"ratios: {json.dumps(r['ratios'])}",
        *(
            [f"contextforge: {r['contextforge']['skipped']}"]
            if "skipped" in r["contextforge"]
            else [
                f"ContextForge {c['version']} (Python {c['python']}) {mode} start-up to /health (a new "
                f"database): {c['healthz_s']} s; RSS idle {c['rss_idle_mb']} MB, {c['processes']} "
                f"processes (PSS together {c['pss_idle_tree_mb']} MB)"
                for mode, c in r["contextforge"].items()
            ]
        ),
    ]
    return "\n".join(lines)


def _only(args: argparse.Namespace, module: str, rows_of: str, name: str) -> None:
    """Run one cost mode of this bench (``bench/{module}.py``'s ``rows_of``) in a temporary folder,
    write its rows to ``bench/out/{name}.json`` (or ``--out``) and print its table."""
    import importlib

    mode = importlib.import_module(module)
    tmp = Path(tempfile.mkdtemp(prefix=f"tc-{name}-"))
    try:
        rows = anyio.run(getattr(mode, rows_of), args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = args.out.with_name(f"{name}.json") if args.out == OUT else args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    print(mode.table(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per side")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of each concurrent run")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--profile", type=Path, default=None, help="py-spy raw samples into this folder")
    parser.add_argument(
        "--governance",
        action="store_true",
        help="only what a rate limit with pins and an OAuth grant cost execute_tool (p50 against neither)",
    )
    parser.add_argument("--postgres", action="store_true", help="with --governance: PostgreSQL too")
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="only what traces exported over OTLP/HTTP cost execute_tool (p50 against none)",
    )
    parser.add_argument(
        "--resources",
        action="store_true",
        help="only resources/read through the gateway against direct, beside execute_tool (p50, same run)",
    )
    parser.add_argument(
        "--audit-stream",
        action="store_true",
        help="only what the audit stream (a webhook sink, a local receiver) costs execute_tool (p50, on/off)",
    )
    args = parser.parse_args()
    if args.audit_stream:  # a webhook sink on against off (#24)
        _only(args, "_stream_cost", "stream_rows", "audit_stream")
        return
    if args.governance:  # a limit with pins, and an OAuth grant, against a token with neither (#21, #22)
        _only(args, "_governance_cost", "governance_rows", "governance")
        return
    if args.tracing:  # traces on against off (#24)
        _only(args, "_tracing_cost", "tracing_rows", "tracing")
        return
    if args.resources:  # resources/read through the gateway, beside execute_tool (#34)
        _only(args, "_resource_read", "resources_rows", "resources_read")
        return
    try:
        report = anyio.run(run, args)
    except contextforge.Unavailable as e:  # named but not startable: fail, never drop the row (#25)
        print(f"overhead: {e}", file=sys.stderr)
        sys.exit(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(table(report))


if __name__ == "__main__":
    main()
