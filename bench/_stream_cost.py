"""What the audit stream costs on the hot path (#24): ``bench/overhead.py --audit-stream``.

Two ``toolcrib serve`` processes, each on a SQLite file of its own, the fixture server connected
to both over HTTP: **off** has no sink; **on** streams every audit entry to a webhook (a local
receiver, a process of its own that answers 200 and counts the events), with the default poll and
batch. On the hot path the stream adds one outbox row per call, in the audit write's own
transaction; the delivery runs beside the calls in the same process (the cost measured here too).

Each round runs ``--calls`` sequential ``execute_tool`` calls by handle on each side, alternating
call by call between off and on, and the p50s' medians over the rounds give the ratio, in the same
run. At the end, the receiver must
hold one event per audited call of **on** (each id once or more), or the run fails.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _procs import free_port, stop, wait_http

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROUNDS = 5


async def stream_rows(args: Any, tmp: Path) -> dict[str, Any]:
    """The figures: p50 off and on per round, their medians, the ratio, what the receiver got."""
    import overhead

    fixture, upstream = overhead._start_fixture()
    receiver, receiver_url = _start_receiver()
    try:
        off_gw, off_base, off_token = _gateway(tmp / "off.db", upstream, {}, tmp / "off.log")
        on_env = {"TOOLCRIB_AUDIT_SINK_URL": receiver_url + "/audit"}
        on_gw, on_base, on_token = _gateway(tmp / "on.db", upstream, on_env, tmp / "on.log")
        try:
            return {
                **await _rounds((off_base, off_token), (on_base, on_token), args.calls),
                **_received(receiver_url, tmp / "on.db"),
                **await _audit_write_alone(tmp / "alone.db"),
            }
        finally:
            stop(off_gw)
            stop(on_gw)
    finally:
        stop(receiver)
        stop(fixture)


def _gateway(
    db_path: Path, upstream: str, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str, str]:
    import overhead

    db = f"sqlite:///{db_path}"
    token = overhead._cli(db, "init")["token"]
    overhead._cli(
        db, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream, "--no-pinning"
    )
    port = free_port()
    full = {**overhead._env(), "TOOLCRIB_LOG_LEVEL": "WARNING", "TOOLCRIB_SEMANTIC": "false", **env}
    cmd = [sys.executable, "-m", "toolcrib.cli", "serve", "--port", str(port), "--database", db]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/healthz", proc)
    return proc, base, str(token)


async def _rounds(off: tuple[str, str], on: tuple[str, str], calls: int) -> dict[str, Any]:
    """Off and on called alternately, call by call, so both sides see the same machine (a loaded
    one's noise moves both alike); each round's p50 per side, and their medians."""
    import overhead

    actions = {
        "off": await overhead._handle(off[0], off[1], "echo a message back", "desk__echo_message"),
        "on": await overhead._handle(on[0], on[1], "echo a message back", "desk__echo_message"),
    }
    p50s: dict[str, list[float]] = {"off": [], "on": []}
    deltas: list[float] = []  # on minus off, call pair by call pair: the shift, noise shared
    async with (
        overhead._http_client(off[0] + "/mcp", off[1]) as off_client,
        overhead._http_client(on[0] + "/mcp", on[1]) as on_client,
    ):
        sides = {"off": off_client, "on": on_client}

        async def call(name: str) -> float:
            arguments = {"action_id": actions[name], "arguments": {"message": "hi"}}
            t0 = time.perf_counter()
            overhead._checked(await sides[name].call_tool("execute_tool", arguments))
            return time.perf_counter() - t0

        for _ in range(10):  # warm-up
            await call("off")
            await call("on")
        for _ in range(ROUNDS):
            samples: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(calls):
                for name in ("off", "on"):
                    samples[name].append(await call(name))
            for name, values in samples.items():
                p50s[name].append(round(statistics.median(values) * 1000, 3))
            deltas.extend(b - a for a, b in zip(samples["off"], samples["on"], strict=True))
    off_p50, on_p50 = statistics.median(p50s["off"]), statistics.median(p50s["on"])
    return {
        "p50_ms_off": round(off_p50, 3),
        "p50_ms_on": round(on_p50, 3),
        "ratio_on": round(on_p50 / off_p50, 3),
        "paired_delta_ms_median": round(statistics.median(deltas) * 1000, 3),
        "rounds": p50s,
        "calls_per_side": calls,
    }


async def _audit_write_alone(db_path: Path, calls: int = 1_000) -> dict[str, Any]:
    """A call's audit writes by themselves, in process (open pending, then close), alternately
    without a sink and with one (the outbox row in the closing transaction): p50 in microseconds,
    which a loaded machine's noise does not drown as it does a whole call's."""
    from toolcrib.store import audit, outbox
    from toolcrib.store.audit import AuditEntry
    from toolcrib.store.database import Database

    db = Database(f"sqlite:///{db_path}")
    samples: dict[str, list[float]] = {"off": [], "on": []}
    try:
        await db.migrate()
        for n in range(2 * calls + 100):
            side = "on" if n % 2 else "off"
            outbox.use_sinks(db, ["webhook"] if side == "on" else [])
            entry = AuditEntry(
                "m", "g", "desk", "Helpdesk", "desk__echo_message", "read", True, None, time.time()
            )
            t0 = time.perf_counter()
            entry_id = await audit.open_entry(db, entry)
            await audit.close_entry(db, entry_id, outcome="ok", error_code=None, started=0.0, finished=1.0)
            if n >= 100:  # warm-up
                samples[side].append(time.perf_counter() - t0)
    finally:
        await db.close()
    off, on = (statistics.median(samples[k]) * 1e6 for k in ("off", "on"))
    return {"audit_write_p50_us_off": round(off, 1), "audit_write_p50_us_on": round(on, 1)}


def _received(receiver_url: str, on_db: Path, timeout: float = 60.0) -> dict[str, Any]:
    """Waits (bounded) until the receiver holds an event for every final audit entry of **on**."""
    import sqlite3
    from contextlib import closing

    import httpx2

    with closing(sqlite3.connect(on_db)) as conn:
        audited = conn.execute("SELECT count(*) FROM audit WHERE outcome != 'pending'").fetchone()[0]
    start = time.monotonic()
    while True:
        got = httpx2.get(receiver_url + "/count", timeout=5).json()
        if got["distinct_audit_ids"] >= audited or time.monotonic() - start > timeout:
            break
        time.sleep(0.1)
    if got["distinct_audit_ids"] < audited:
        raise RuntimeError(f"the receiver holds {got['distinct_audit_ids']} of {audited} events")
    return {"audited_on": audited, "received": got, "drained_after_s": round(time.monotonic() - start, 2)}


def _start_receiver() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, __file__, "--receive", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/count", proc)
    return proc, url


def _receive(port: int) -> None:
    """The webhook receiver's process: 200 to every POST; ``GET /count`` says what it holds."""
    ids: set[str] = set()
    audit_ids: set[int] = set()
    totals = {"events": 0, "posts": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            events = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            totals["posts"] += 1
            totals["events"] += len(events)
            ids.update(e["id"] for e in events)
            audit_ids.update(e["unmapped"]["audit_id"] for e in events)
            self._answer(b"")

        def do_GET(self) -> None:
            counts = {**totals, "distinct_ids": len(ids), "distinct_audit_ids": len(audit_ids)}
            self._answer(json.dumps(counts).encode())

        def _answer(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def table(rows: dict[str, Any]) -> str:
    received = rows["received"]
    return "\n".join(
        [
            "| execute_tool p50, audit stream off | on (webhook, local receiver) | × | audited on | "
            "received (distinct ids / events / POSTs) | drained after |",
            "|---|---|---|---|---|---|",
            f"| {rows['p50_ms_off']} ms | {rows['p50_ms_on']} ms | {rows['ratio_on']} | {rows['audited_on']} "
            f"| {received['distinct_ids']} / {received['events']} / {received['posts']} "
            f"| {rows['drained_after_s']} s |",
            "",
            f"median of on − off over call pairs (alternating): {rows['paired_delta_ms_median']} ms",
            "a call's audit writes alone (open + close, SQLite, in process): "
            f"p50 {rows['audit_write_p50_us_off']} µs without a sink, "
            f"{rows['audit_write_p50_us_on']} µs with the outbox row",
        ]
    )


if __name__ == "__main__" and sys.argv[1:2] == ["--receive"]:
    _receive(int(sys.argv[2]))
