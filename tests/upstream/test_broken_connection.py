"""One POST whose connection breaks fails its own call only; the session and the other calls go on
(R-13.2, #12). Before, the SDK's session ended with it and every call in flight on the upstream
failed with "connection closed".

A real fixture server over Streamable HTTP, behind a real TCP proxy that closes, without an
answer, the connection of any request carrying a marker (as a server that closes a connection a
request was just sent on does), and forwards everything else.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from mcp_types.jsonrpc import INTERNAL_ERROR

from tests.conftest import Process
from toolcrib.errors import UpstreamError
from toolcrib.upstream.http_client import _failed_request
from toolcrib.upstream.spec import UpstreamSpec
from toolcrib.upstream.supervisor import Upstreams

pytestmark = pytest.mark.anyio

MARKER = b"DROP-THIS-CALL"
CALLS = 20


async def _pump(source: SocketStream, sink: SocketStream, drop_marked: bool) -> None:
    try:
        async for chunk in source:
            if drop_marked and MARKER in chunk:
                await source.aclose()  # the request is never answered; the connection is gone
                await sink.aclose()
                return
            await sink.send(chunk)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        await sink.aclose()


@asynccontextmanager
async def dropping_proxy(url: str) -> AsyncIterator[str]:
    """A URL that reaches ``url`` through the proxy that drops marked requests."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)

    async def serve(client: SocketStream) -> None:
        async with (
            client,
            await anyio.connect_tcp(host, int(port)) as upstream,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_pump, upstream, client, False)
            await _pump(client, upstream, True)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", family=socket.AF_INET)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield f"http://127.0.0.1:{bound}/mcp"
        finally:
            tg.cancel_scope.cancel()


async def test_r13_2_a_call_whose_connection_breaks_fails_alone_and_the_session_goes_on(
    upstreams: Upstreams, fixture_http: Process
) -> None:
    async with dropping_proxy(fixture_http.url) as proxy:
        await _calls_through(upstreams, proxy)


async def _calls_through(upstreams: Upstreams, proxy: str) -> None:
    session = upstreams.session(UpstreamSpec(name="web", transport="http", url=proxy))
    await session.call_tool("echo_message", {"message": "warm up"})
    answered: list[str] = []
    failed: list[str] = []

    async def call(message: str, seconds: float) -> None:
        try:
            if seconds:
                await session.call_tool("slow_operation", {"seconds": seconds})
            answer = await session.call_tool("echo_message", {"message": message})
            answered.append(answer["structuredContent"]["received"]["message"])
        except UpstreamError as exc:
            failed.append(f"{message}: {exc.code}")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(CALLS):  # each holds a call open upstream while the marked one breaks
                tg.start_soon(call, f"call {n}", 1.0)
            await anyio.sleep(0.3)
            tg.start_soon(call, MARKER.decode(), 0.0)
    assert failed == [f"{MARKER.decode()}: upstream_error"]
    assert sorted(answered) == sorted(f"call {n}" for n in range(CALLS))
    assert session.running
    assert (await session.call_tool("add_numbers", {"a": 2, "b": 2}))["structuredContent"] == {"sum": 4.0}


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}, 502),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}, 202),
        ({"jsonrpc": "2.0", "id": 3, "result": {}}, 202),
    ],
    ids=["request", "notification", "response"],
)
def test_r13_2_a_broken_post_answers_its_request_and_loses_no_session_over_a_notification(
    message: dict[str, Any], status: int
) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/mcp", json=message)
    answer = _failed_request(request, httpx2.ReadError("reset"))
    assert answer is not None
    assert answer.status_code == status
    if status == 502:
        assert answer.json()["id"] == 7
        assert answer.json()["error"]["code"] == INTERNAL_ERROR


def test_r13_2_traffic_that_is_no_json_rpc_post_is_not_contained() -> None:
    assert _failed_request(httpx2.Request("GET", "http://127.0.0.1:9/mcp"), httpx2.ReadError("x")) is None
    other = httpx2.Request("POST", "http://127.0.0.1:9/token", content=b"grant_type=refresh_token")
    assert _failed_request(other, httpx2.ReadError("x")) is None
