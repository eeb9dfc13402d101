"""What traces cost on the hot path (#24, R-14.2): ``bench/overhead.py --tracing``.

Two ``toolcrib serve`` processes, alike but for the standard ``OTEL_*`` variables: **off** has none,
**on** exports over OTLP/HTTP to a local receiver (``tests/fixtures/otlp_receiver.py``, decoding
every request as a collector would) with the SDK's default batching. Each has its own SQLite
database with the fixture server connected over HTTP. Each round runs ``--calls`` sequential
``execute_tool`` calls by handle on each, interleaved (one off, one on), so both meet the same
moments of a loaded machine. Reported: the medians of their p50 (and p90) over the rounds and the
ratio on/off, in the same run; each gateway's CPU time per call (utime+stime from /proc, the
exporter's thread included); and the spans the receiver got per call, so a run where nothing was
exported cannot pass for a cheap one.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from _procs import cpu_seconds, free_port, stop, wait_http

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROUNDS = 3


async def tracing_rows(args: Any, tmp: Path) -> dict[str, Any]:
    """``{"p50_ms_off", "p50_ms_on", "ratio_p50", ..., "spans_per_call"}``."""
    from tests.fixtures.otlp_receiver import running_receiver

    import overhead

    fixture, upstream = overhead._start_fixture()
    gateways: list[subprocess.Popen[bytes]] = []
    try:
        with running_receiver() as receiver:
            sides = {}
            for name, otel in (("off", {}), ("on", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})):
                db = f"sqlite:///{tmp / f'tracing-{name}.db'}"
                token = overhead._cli(db, "init")["token"]
                overhead._cli(db, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream)
                proc, base = _start_gateway(db, otel, tmp / f"tracing-{name}.log")
                gateways.append(proc)
                handle = await overhead._handle(base, token, "echo a message back", "desk__echo_message")
                sides[name] = (base, token, handle, proc.pid)
            return await _rounds(sides, args.calls, receiver)
    finally:
        for proc in gateways:
            stop(proc)
        stop(fixture)


def _start_gateway(db: str, otel: dict[str, str], log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    import overhead

    port = free_port()
    env = {**overhead._env(), "TOOLCRIB_LOG_LEVEL": "WARNING", "TOOLCRIB_SEMANTIC": "false"}
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")} | otel
    cmd = [sys.executable, "-m", "toolcrib.cli", "serve", "--port", str(port), "--database", db]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/healthz", proc)
    return proc, base


async def _rounds(sides: dict[str, tuple[str, str, str, int]], calls: int, receiver: Any) -> dict[str, Any]:
    import overhead

    p50s: dict[str, list[float]] = {"off": [], "on": []}
    p90s: dict[str, list[float]] = {"off": [], "on": []}
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    async with (
        overhead._http_client(sides["off"][0] + "/mcp", sides["off"][1]) as off,
        overhead._http_client(sides["on"][0] + "/mcp", sides["on"][1]) as on,
    ):
        calls_of = {name: _caller(client, sides[name][2]) for name, client in (("off", off), ("on", on))}
        for _ in range(ROUNDS):
            cpu0 = {name: cpu_seconds(sides[name][3]) for name in calls_of}
            samples = await _interleaved(calls_of, calls)
            for name, taken in samples.items():
                cpu[name].append(round((cpu_seconds(sides[name][3]) - cpu0[name]) * 1000 / (calls + 10), 3))
                run = overhead._percentiles(taken)
                p50s[name].append(run["p50_ms"])
                p90s[name].append(run["p90_ms"])
    on_calls = ROUNDS * (calls + 10)  # with each round's warm-up
    spans = receiver.wait_for(lambda got: len(_executions(got)) >= on_calls, timeout=60)
    executions = _executions(spans)
    in_executions = sum(1 for s in spans if s.trace_id in executions)
    p50 = {name: statistics.median(values) for name, values in p50s.items()}
    p90 = {name: statistics.median(values) for name, values in p90s.items()}
    cpu_ms = {name: statistics.median(values) for name, values in cpu.items()}
    return {
        "p50_ms_off": round(p50["off"], 3),
        "p50_ms_on": round(p50["on"], 3),
        "ratio_p50": round(p50["on"] / p50["off"], 3),
        "p90_ms_off": round(p90["off"], 3),
        "p90_ms_on": round(p90["on"], 3),
        "ratio_p90": round(p90["on"] / p90["off"], 3),
        "gateway_cpu_ms_per_call_off": round(cpu_ms["off"], 3),
        "gateway_cpu_ms_per_call_on": round(cpu_ms["on"], 3),
        "ratio_gateway_cpu": round(cpu_ms["on"] / cpu_ms["off"], 3),
        "spans_per_call": round(in_executions / len(executions), 1),
        "rounds": {"p50_ms": p50s, "p90_ms": p90s, "gateway_cpu_ms_per_call": cpu},
        "calls_per_round": calls,
        "exporter": "OTLP/HTTP (protobuf) to a local receiver, the SDK's default batching",
    }


def _caller(client: Any, action: str) -> Any:
    import overhead

    arguments = {"action_id": action, "arguments": {"message": "hi"}}

    async def call() -> Any:
        return overhead._checked(await client.call_tool("execute_tool", arguments))

    return call


async def _interleaved(calls_of: dict[str, Any], calls: int) -> dict[str, list[float]]:
    """``calls`` calls on each side, one off then one on, the order swapped every other pair, so
    both sides meet the same moments of a loaded machine (after 10 warm-up calls each)."""
    import time

    for call in calls_of.values():
        for _ in range(10):
            await call()
    samples: dict[str, list[float]] = {name: [] for name in calls_of}
    names = list(calls_of)
    for i in range(calls):
        for name in names if i % 2 == 0 else reversed(names):
            t0 = time.perf_counter()
            await calls_of[name]()
            samples[name].append(time.perf_counter() - t0)
    return samples


def _executions(spans: list[Any]) -> set[str]:
    """The trace ids of the ``execute_tool`` calls the receiver got."""
    return {s.trace_id for s in spans if s.name == "execute_tool"}


def table(rows: dict[str, Any]) -> str:
    return "\n".join(
        [
            "| execute_tool (handle, HTTP upstream) | p50 | p90 | gateway CPU per call |",
            "|---|---|---|---|",
            f"| traces off (no OTEL_* variables) | {rows['p50_ms_off']} ms | {rows['p90_ms_off']} ms "
            f"| {rows['gateway_cpu_ms_per_call_off']} ms |",
            f"| traces on (OTLP/HTTP, local receiver) | {rows['p50_ms_on']} ms | {rows['p90_ms_on']} ms "
            f"| {rows['gateway_cpu_ms_per_call_on']} ms |",
            f"| on / off | {rows['ratio_p50']} | {rows['ratio_p90']} | {rows['ratio_gateway_cpu']} |",
            "",
            f"{rows['spans_per_call']} spans exported per call; medians of {ROUNDS} rounds of "
            f"{rows['calls_per_round']} sequential calls on each side",
        ]
    )
