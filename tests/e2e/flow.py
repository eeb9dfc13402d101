"""A gateway with one stdio connection ``desk`` to the fixture server, and SDK clients with callbacks.

Over stdio the fixture server can send what a stateless HTTP upstream cannot: progress, log lines
and questions during a call (#14).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import FIXTURE_SERVER
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.store import audit as audit_store
from toolcrib.store.audit import AuditEntry, AuditFilter


@dataclass
class Served:
    gw: Gateway
    base: str
    owner: str


@asynccontextmanager
async def desk_gateway(
    tmp_path: Path, *, stateless: bool, clock: Callable[[], float] | None = None, **values: Any
) -> AsyncIterator[Served]:
    settings = settings_for(
        tmp_path, stateless=stateless, policy_cache_seconds=0, connect_timeout_seconds=20, **values
    )
    async with open_gateway(settings, clock) as gw:
        owner = await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        assert row.status == "active", row.reason
        async with serve(gw) as base:
            yield Served(gw, base, owner)


@asynccontextmanager
async def client(base: str, token: str, **options: Any) -> AsyncIterator[Client]:
    """The SDK client; ``mode="legacy"`` speaks the handshake era (sessions when the gateway keeps them)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(base + "/mcp", http_client=http)
    async with http, Client(transport, cache=None, **options) as connected:
        yield connected


async def wait_for(check: Callable[[], Any], seconds: float = 20) -> Any:
    """Poll ``check`` until it answers something truthy, within ``seconds``."""
    with anyio.fail_after(seconds):
        while not (found := await check()):  # noqa: ASYNC110 - a file or a row, no event to wait on; bounded
            await anyio.sleep(0.05)
    return found


async def audit_rows(gw: Gateway, operation: str) -> list[AuditEntry]:
    return await audit_store.search(gw.store.db, AuditFilter(operation=operation))


def read_marker(path: Path) -> str:
    return path.read_text() if path.exists() else ""
