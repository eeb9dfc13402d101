"""What ``resources/read`` costs through the gateway, beside ``execute_tool`` (#34):
``bench/overhead.py --resources``.

One fixture server over HTTP (its ``docs://handbook`` and its ``echo_message`` tool) and one real
``toolcrib serve`` in front of it (SQLite, the fixture connected as ``desk``). Each round runs
``--calls`` sequential calls of four kinds, interleaved so all meet the same moments of a loaded
machine: ``resources/read`` straight to the upstream and through the gateway
(``toolcrib://desk/docs://handbook``: the gates, one audit row, redaction and caps), and
``echo_message`` straight and as ``execute_tool`` by handle. Reported: the medians of each kind's
p50 (and p90) over the rounds and the gateway/direct ratios of both, in the same run.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from _procs import stop

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROUNDS = 3
KINDS = ("read_direct", "read_gateway", "call_direct", "execute_tool")


async def resources_rows(args: Any, tmp: Path) -> dict[str, Any]:
    """``{"p50_ms": {kind: ...}, "ratio_read_p50", "ratio_execute_p50", ...}``."""
    import _tracing_cost as tracing
    import overhead

    fixture, upstream = overhead._start_fixture()
    gateway = None
    try:
        db = f"sqlite:///{tmp / 'resources.db'}"
        token = overhead._cli(db, "init")["token"]
        overhead._cli(db, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream)
        gateway, base = tracing._start_gateway(db, {}, tmp / "resources.log")
        handle = await overhead._handle(base, token, "echo a message back", "desk__echo_message")
        async with (
            overhead._http_client(upstream) as direct,
            overhead._http_client(base + "/mcp", token) as through,
        ):
            calls = _calls(direct, through, handle)
            rounds: dict[str, list[float]] = {k: [] for k in KINDS}
            nineties: dict[str, list[float]] = {k: [] for k in KINDS}
            for _ in range(ROUNDS):
                for kind, taken in (await tracing._interleaved(calls, args.calls)).items():
                    run = overhead._percentiles(taken)
                    rounds[kind].append(run["p50_ms"])
                    nineties[kind].append(run["p90_ms"])
    finally:
        if gateway is not None:
            stop(gateway)
        stop(fixture)
    p50 = {k: round(statistics.median(v), 3) for k, v in rounds.items()}
    p90 = {k: round(statistics.median(v), 3) for k, v in nineties.items()}
    return {
        "p50_ms": p50,
        "p90_ms": p90,
        "ratio_read_p50": round(p50["read_gateway"] / p50["read_direct"], 3),
        "ratio_execute_p50": round(p50["execute_tool"] / p50["call_direct"], 3),
        "rounds": rounds,
        "calls_per_round": args.calls,
    }


def _calls(direct: Any, through: Any, handle: str) -> dict[str, Any]:
    import overhead

    async def read_direct() -> Any:
        return await direct.read_resource("docs://handbook")

    async def read_gateway() -> Any:
        return await through.read_resource("toolcrib://desk/docs://handbook")

    async def call_direct() -> Any:
        return overhead._checked(await direct.call_tool("echo_message", {"message": "hi"}))

    async def execute_tool() -> Any:
        arguments = {"action_id": handle, "arguments": {"message": "hi"}}
        return overhead._checked(await through.call_tool("execute_tool", arguments))

    return {
        "read_direct": read_direct,
        "read_gateway": read_gateway,
        "call_direct": call_direct,
        "execute_tool": execute_tool,
    }


def table(rows: dict[str, Any]) -> str:
    p50, p90 = rows["p50_ms"], rows["p90_ms"]
    return "\n".join(
        [
            "| HTTP upstream, loopback | direct p50 | through toolcrib p50 | p90 direct / toolcrib "
            "| ratio p50 |",
            "|---|---|---|---|---|",
            f"| resources/read docs://handbook | {p50['read_direct']} ms | {p50['read_gateway']} ms "
            f"| {p90['read_direct']} / {p90['read_gateway']} ms | {rows['ratio_read_p50']} |",
            f"| tools/call echo_message (execute_tool by handle) | {p50['call_direct']} ms "
            f"| {p50['execute_tool']} ms | {p90['call_direct']} / {p90['execute_tool']} ms "
            f"| {rows['ratio_execute_p50']} |",
            "",
            f"medians of {ROUNDS} rounds of {rows['calls_per_round']} sequential calls of each kind, "
            "interleaved",
        ]
    )
