"""R-2.6 protocol courtesy over real HTTP: ``logging/setLevel`` is served, and a browser ``Origin``
equal to the gateway's own origin passes while a DNS-rebinding page's does not (#21).

The gateway is the in-process uvicorn one (``tests/e2e/flow.py``) with the real fixture server as
its stdio connection ``desk``, whose ``report_progress`` tool sends one ``info`` log line.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import httpx2
import mcp_types as types
import pytest

from tests.e2e.flow import Served, client, desk_gateway

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "browser-page", "version": "1"},
    },
}


async def _logs_at(served: Served, level: types.LoggingLevel) -> list[object]:
    """The log lines one ``report_progress`` call relays after ``logging/setLevel(level)``."""
    logs: list[object] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with client(served.base, served.owner, mode="legacy", logging_callback=on_log) as c:
        with warnings.catch_warnings():  # the logging capability is deprecated at 2026-07-28
            warnings.simplefilter("ignore")
            answer = await c.set_logging_level(level)
        assert answer.model_dump(exclude_none=True) == {}
        result = await c.call_tool("execute_tool", {"tool": "desk__report_progress", "arguments": {}})
        assert not result.is_error, result
    return logs


async def test_r2_6_set_level_is_served_and_filters_the_upstreams_log_lines(tmp_path: Path) -> None:
    async with desk_gateway(tmp_path, stateless=False) as served:
        assert await _logs_at(served, "debug") == ["three steps done"]
        assert await _logs_at(served, "info") == ["three steps done"]
        assert await _logs_at(served, "warning") == []  # the upstream's line is info: below warning
        assert await _logs_at(served, "emergency") == []


async def test_r2_6_set_level_is_answered_on_a_stateless_gateway_too(tmp_path: Path) -> None:
    async with (
        desk_gateway(tmp_path, stateless=True) as served,
        client(served.base, served.owner, mode="legacy") as c,
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer = await c.set_logging_level("error")
        assert answer.model_dump(exclude_none=True) == {}


async def _post(served: Served, host: str, origin: str) -> int:
    """POST an initialize as a browser would: its own ``Host`` and ``Origin``, with the grant."""
    headers = {
        "Host": host,
        "Origin": origin,
        "Authorization": f"Bearer {served.owner}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(served.base + "/mcp", content=json.dumps(INITIALIZE), headers=headers)
    return answer.status_code


async def test_r2_6_the_gateways_own_origin_is_allowed_without_configuration(tmp_path: Path) -> None:
    async with desk_gateway(tmp_path, stateless=True, public_url="https://gw.example.org") as served:
        port = served.base.rsplit(":", 1)[1]
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert await _post(served, host, f"http://{host}") == 200, host
        # The public URL's origin, reached directly or through a proxy forwarding its Host.
        assert await _post(served, f"127.0.0.1:{port}", "https://gw.example.org") == 200
        assert await _post(served, "gw.example.org", "https://gw.example.org") == 200


async def test_r2_4_a_dns_rebinding_page_is_refused(tmp_path: Path) -> None:
    async with desk_gateway(tmp_path, stateless=True) as served:
        port = served.base.rsplit(":", 1)[1]
        # A page whose name was rebound to 127.0.0.1: Host and Origin both carry its name.
        assert await _post(served, f"evil.example:{port}", f"http://evil.example:{port}") == 403
        assert await _post(served, "evil.example.com", "http://evil.example.com") == 403
        # A foreign page calling the gateway by its own name, and another local port's page.
        assert await _post(served, f"127.0.0.1:{port}", "http://evil.example") == 403
        assert await _post(served, f"localhost:{port}", "http://localhost:3000") == 403
        assert await _post(served, f"localhost:{port}", "null") == 403
