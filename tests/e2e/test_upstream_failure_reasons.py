"""A URL connection that cannot be reached says why (R-13.1; #32, finding 10).

Before, every such connection read "the server ended during start-up": a name that does not
resolve, a port nobody listens on, a 404 and a TLS mismatch alike. Real sockets on loopback
(and a ``.invalid`` name, which never resolves, RFC 6761), a real gateway adding each connection:
its status is ``error`` and its reason names the cause.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, owner_token, serve_asgi, settings_for
from tests.netguard import Recorder, loopback_only
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection, connection_view
from toolcrib.gateway.core import Gateway

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

KEY = "KEY-9b1e77c04d2a"


async def _not_found(request: Request) -> Response:
    return PlainTextResponse("no MCP here", status_code=404)


async def _broken(request: Request) -> Response:
    return PlainTextResponse("Traceback (most recent call last): ...", status_code=500)


async def _refusing(request: Request) -> Response:
    """A server that refuses in JSON-RPC, quoting the key it was sent."""
    said = f"this client is not allowed (key {request.headers.get('x-api-key')})"
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": said}}
    return JSONResponse(body, status_code=400)


APP = Starlette(
    routes=[
        Route("/missing", _not_found, methods=["GET", "POST", "DELETE"]),
        Route("/broken", _broken, methods=["GET", "POST", "DELETE"]),
        Route("/refusing", _refusing, methods=["GET", "POST", "DELETE"]),
    ]
)


@pytest.fixture
def guard() -> Iterator[Recorder]:
    with loopback_only() as recorder:
        yield recorder


@asynccontextmanager
async def gateway(tmp_path: Path) -> AsyncIterator[tuple[Gateway, str]]:
    settings = settings_for(tmp_path, semantic=False, connect_timeout_seconds=2, restart_backoff_seconds=0.05)
    async with serve_asgi(APP) as base, open_gateway(settings) as gw:
        await owner_token(gw)
        yield gw, base


async def _reason(gw: Gateway, name: str, url: str, **options: object) -> str:
    row = await add_connection(gw, name, connector="Probe", url=url, actor=OPERATOR, **options)  # type: ignore[arg-type]
    view = connection_view(row)
    assert view["status"] == "error", view
    return str(view["reason"])


async def test_r13_1_a_port_with_nothing_listening_reads_connection_refused(
    tmp_path: Path, guard: Recorder
) -> None:
    async with gateway(tmp_path) as (gw, _):
        assert (
            await _reason(gw, "closed", f"http://127.0.0.1:{free_port()}/mcp") == "closed: connection refused"
        )
    assert guard.outside_loopback() == []


async def test_r13_1_a_name_that_does_not_resolve_reads_name_not_resolved(
    tmp_path: Path, guard: Recorder
) -> None:
    async with gateway(tmp_path) as (gw, _):
        assert await _reason(gw, "nowhere", "http://nonexistent.invalid/mcp") == "nowhere: name not resolved"
    assert guard.outside_loopback() == []


async def test_r13_1_an_http_error_status_reads_as_that_status(tmp_path: Path) -> None:
    async with gateway(tmp_path) as (gw, base):
        assert await _reason(gw, "missing", base + "/missing") == "missing: HTTP 404"
        assert await _reason(gw, "broken", base + "/broken") == "broken: HTTP 500"


async def test_r13_1_the_upstreams_own_error_is_given_redacted(tmp_path: Path) -> None:
    async with gateway(tmp_path) as (gw, base):
        reason = await _reason(gw, "refusing", base + "/refusing", headers={"X-Api-Key": KEY})
    assert reason.startswith("refusing: HTTP 400: this client is not allowed (key ")
    assert KEY not in reason


async def test_r13_1_https_to_a_server_that_speaks_plain_http_reads_tls_failure(tmp_path: Path) -> None:
    async with gateway(tmp_path) as (gw, base):
        reason = await _reason(gw, "tls", base.replace("http://", "https://") + "/missing")
    assert reason.startswith("tls: TLS failure ("), reason


async def test_r13_1_a_server_that_accepts_and_never_answers_reads_timeout(tmp_path: Path) -> None:
    with socket.socket() as silent:  # the kernel completes the handshake; nobody ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        async with gateway(tmp_path) as (gw, _):
            reason = await _reason(gw, "silent", url)
    assert reason.startswith("silent: timeout"), reason
