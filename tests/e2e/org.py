"""An organization served in-process for the end-to-end governance tests: members, tokens, calls."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, gateway_payload
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity import members

ALL_SCOPES = "mcp:tools mcp:read mcp:write mcp:destructive"
PREFIX = "toolcrib__"
READ_TOOL = "desk__get_request_headers"  # readOnlyHint and a read verb: classified read


# --- an organization served in-process ---------------------------------------------------------


@dataclass
class Org:
    gw: Gateway
    base: str
    owner: str
    upstream: str
    db_url: str
    _members: set[str] = field(default_factory=set)

    async def token(self, name: str, role: str = "member", scopes: str = ALL_SCOPES) -> str:
        """A fresh personal access token of ``name`` (created with ``role`` on first use)."""
        if name not in self._members:
            await members.add_member(self.gw.store, name, role, actor=OPERATOR)
            self._members.add(name)
        _, token = await members.create_token(self.gw.store, name, scopes, actor=OPERATOR)
        return token

    async def call(self, token: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
        async with connect(self.base, token) as client:
            return await client.call_tool(name, arguments or {})

    async def execute(self, token: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.call(token, "execute_tool", {"tool": tool, "arguments": arguments or {}})

    async def search(self, token: str, query: str) -> dict[str, Any]:
        return gateway_payload(await self.call(token, "search_tools", {"query": query, "limit": 5}))

    async def control(self, token: str, operation: str, arguments: dict[str, Any] | None = None) -> Any:
        result = await self.call(token, PREFIX + operation, arguments)
        assert not result.is_error, result
        return gateway_payload(result)["result"]

    async def listed(self, token: str) -> list[str]:
        async with connect(self.base, token) as client:
            return [t.name for t in (await client.list_tools()).tools]

    async def block(self, **rule: Any) -> str:
        return (await restrictions.add_restriction(self.gw.store, effect="block", actor=OPERATOR, **rule)).id

    async def allow(self, **rule: Any) -> str:
        return (await restrictions.add_restriction(self.gw.store, effect="allow", actor=OPERATOR, **rule)).id


@asynccontextmanager
async def organization(
    tmp_path: Path, upstream: Process, clock: Callable[[], float] | None = None, **values: Any
) -> AsyncIterator[Org]:
    """Owner, one HTTP connection ``desk`` to the fixture server; policy re-read on every call
    unless ``policy_cache_seconds`` is given."""
    settings = settings_for(tmp_path, **{"policy_cache_seconds": 0, "connect_timeout_seconds": 20, **values})
    async with open_gateway(settings, clock) as gw:
        owner = await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", url=upstream.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        async with serve(gw) as base:
            yield Org(gw, base, owner, upstream.url, settings.database_url)


def names_of(found: dict[str, Any]) -> list[str]:
    return [card["name"] for card in found["results"]]


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return dict(gateway_payload(result)["error"])


async def rpc(base: str, token: str | None, method: str, params: dict[str, Any]) -> httpx2.Response:
    """One raw JSON-RPC POST to ``/mcp`` (stateless), to see the HTTP status itself."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(base + "/mcp", json=body, headers=headers)


def add_call(tool: str = "desk__add_numbers") -> dict[str, Any]:
    return {"name": "execute_tool", "arguments": {"tool": tool, "arguments": {"a": 1, "b": 2}}}
