"""The real ASGI app driven in-process (httpx2 ``ASGITransport``), lifespan and all.

Raw JSON-RPC and REST requests, so a test sees exactly what a client would: the HTTP status, a
JSON-RPC ``error`` object if any, and the in-band ``{"error": ...}`` of a tool result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from toolcrib.gateway.core import Gateway
from toolcrib.web.app import create_app

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@asynccontextmanager
async def asgi_client(gw: Gateway) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client whose requests go straight into the app serving ``gw`` (no socket)."""
    app = create_app(gw.settings, gateway=gw)
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://toolcrib.test", timeout=60) as http,
    ):
        yield http


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def rpc(
    http: httpx2.AsyncClient, token: str, method: str, params: Any, rid: int = 1
) -> httpx2.Response:
    """One JSON-RPC request to ``/mcp`` (stateless, JSON response mode)."""
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return await http.post("/mcp", json=body, headers={**MCP_HEADERS, **bearer(token)})


async def call_tool(http: httpx2.AsyncClient, token: str, name: str, arguments: Any) -> dict[str, Any]:
    """The ``result`` of a ``tools/call``; fails the test on a JSON-RPC error or a non-200."""
    response = await rpc(http, token, "tools/call", {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def in_band_error(result: dict[str, Any]) -> dict[str, Any]:
    """The ``{"code", "message", ...}`` of an in-band error answer (R-3.3)."""
    assert result.get("isError") is True, result
    error: dict[str, Any] = result["structuredContent"]["error"]
    return error


async def rest(http: httpx2.AsyncClient, token: str, path: str, content: bytes) -> httpx2.Response:
    """One ``POST /api/{resource}/{operation}`` with a raw body."""
    headers = {**bearer(token), "Content-Type": "application/json"}
    return await http.post(f"/api/{path}", content=content, headers=headers)
