"""The official MCP Python SDK client, pointed at a running gateway with a bearer token."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def connect(base_url: str, token: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with (
        http,
        Client(streamable_http_client(base_url + "/mcp", http_client=http), cache=None) as client,
    ):
        yield client


def payload(result: Any) -> dict[str, Any]:
    """The structured content of a tools/call result."""
    structured = result.structured_content
    assert isinstance(structured, dict), result
    return structured


def gateway_payload(result: Any) -> dict[str, Any]:
    """An answer the gateway itself wrote (search, errors): structured, mirrored as JSON text (R-3.1)."""
    structured = payload(result)
    assert json.loads(result.content[0].text) == structured
    return structured


def error_code(result: Any) -> str:
    assert result.is_error, result
    return str(gateway_payload(result)["error"]["code"])
