"""Where the gateway's CPU per call goes (#12): each part of an ``execute_tool`` call alone.

In one process, against the fixture server over Streamable HTTP (its own process), CPU time per
call (``time.process_time``: this process, every thread) of:

- a bare httpx2 POST of the same ``tools/call`` body (the HTTP client alone);
- the MCP SDK's client ``call_tool`` (what the gateway calls upstream with);
- ``UpstreamSession.call_tool`` (the SDK client inside toolcrib's session: bounds, translation);
- ``authenticate`` (the grant read of every request);
- ``execute_tool`` by public name (the whole pipeline of SPEC section 6 around the upstream call:
  policy, validation, the audit row opened and closed, shaping).

The server side (uvicorn, Starlette, the SDK's server) is what ``bench/overhead.py`` adds on top.

    PYTHONPATH=src python bench/hot_path_parts.py [--calls 800]   # table + bench/out/hot_path_parts.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src"), str(ROOT / "bench")]

from tests.e2e.inprocess import open_gateway, settings_for  # noqa: E402
from tests.principals import OPERATOR  # noqa: E402

from _procs import stop  # noqa: E402
from overhead import _start_fixture  # noqa: E402
from toolcrib.gateway.calls.execute import execute_tool  # noqa: E402
from toolcrib.gateway.connections.manage import add_connection, spec_of  # noqa: E402
from toolcrib.gateway.identity import members  # noqa: E402

OUT = ROOT / "bench" / "out" / "hot_path_parts.json"
Call = Callable[[], Awaitable[Any]]


async def _cpu_ms(call: Call, calls: int, rounds: int = 3) -> float:
    """Median over ``rounds`` of the CPU milliseconds per call, after a warm-up."""
    for _ in range(20):
        await call()
    per_round = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            await call()
        per_round.append((time.process_time() - start) * 1000 / calls)
    return round(statistics.median(per_round), 3)


async def _bare_post(url: str, calls: int) -> float:
    async with httpx2.AsyncClient() as http, Client(streamable_http_client(url, http_client=http)) as client:
        seen: dict[str, Any] = {}

        async def capture(request: httpx2.Request) -> None:
            if b'"tools/call"' in request.content:
                seen["headers"] = {
                    k: v for k, v in request.headers.items() if k not in ("host", "content-length")
                }
                seen["body"] = request.content

        http.event_hooks["request"].append(capture)
        await client.call_tool("echo_message", {"message": "hello"})  # the SDK's own request, captured
        headers, content = seen["headers"], seen["body"]

        async def post() -> None:
            json.loads((await http.post(url, content=content, headers=headers)).content)

        return await _cpu_ms(post, calls)


async def _sdk_client(url: str, calls: int) -> float:
    async with (
        httpx2.AsyncClient() as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as c,
    ):
        return await _cpu_ms(lambda: c.call_tool("echo_message", {"message": "hello"}), calls)


async def run(calls: int) -> dict[str, Any]:
    fixture, url = _start_fixture()
    try:
        figures = {
            "bare httpx2 POST": await _bare_post(url, calls),
            "MCP SDK client": await _sdk_client(url, calls),
        }
        with tempfile.TemporaryDirectory() as tmp:
            async with open_gateway(settings_for(Path(tmp), semantic=False)) as gw:
                _, token = await members.init_owner(gw.store, "owner")
                await add_connection(gw, "desk", connector="Helpdesk", url=url, actor=OPERATOR)
                principal = await gw.bearers.authenticate(token)
                session = gw.upstreams.session(spec_of(gw, gw.catalog.connections["desk"]))
                arguments = {"message": "hello"}
                figures["UpstreamSession.call_tool"] = await _cpu_ms(
                    lambda: session.call_tool("echo_message", arguments), calls
                )
                figures["authenticate"] = await _cpu_ms(lambda: gw.bearers.authenticate(token), calls)
                figures["execute_tool"] = await _cpu_ms(
                    lambda: execute_tool(gw, principal, tool="desk__echo_message", arguments=arguments), calls
                )
        return {"calls": calls, "cpu_ms_per_call": figures}
    finally:
        stop(fixture)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    report = anyio.run(run, args.calls, backend_options={"use_uvloop": True})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print("| part | CPU ms per call |\n|---|---|")
    for name, ms in report["cpu_ms_per_call"].items():
        print(f"| {name} | {ms} |")


if __name__ == "__main__":
    main()
