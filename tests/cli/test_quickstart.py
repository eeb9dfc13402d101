"""``make run`` is ``toolcrib quickstart``: a demo organization with real MCP servers from PyPI,
served, and the README's client script answering through it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from tests.conftest import TOOLCRIB, env_for, free_port, wait_http

pytestmark = pytest.mark.e2e


async def _readme_script(url: str, token: str) -> str:
    """What the README's Python example does: search, then execute the first card."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        found = await client.call_tool("search_tools", {"query": "current time in Tokyo"})
        card = found.structured_content["results"][0]
        assert card["name"] == "time__get_current_time"
        result = await client.call_tool(
            "execute_tool", {"action_id": card["action_id"], "arguments": {"timezone": "Asia/Tokyo"}}
        )
    assert not result.is_error, result.content
    return str(result.content[0].text)


def test_quickstart_serves_a_demo_organization_the_readme_script_can_use(tmp_path: Path) -> None:
    port = free_port()
    database = f"sqlite:///{tmp_path / 'toolcrib.db'}"
    command = [*TOOLCRIB, "quickstart", "--database", database, "--port", str(port)]
    with open(tmp_path / "quickstart.log", "wb") as log:
        # cwd: quickstart remembers the database there (.env), as `make run` does in the checkout
        proc = subprocess.Popen(command, cwd=tmp_path, env=env_for(), stdout=log, stderr=log)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz", 180.0, proc)
            token = (tmp_path / ".toolcrib" / "demo-token").read_text().strip()
            answer = anyio.run(_readme_script, f"http://127.0.0.1:{port}/mcp", token)
        finally:
            proc.terminate()
            proc.wait(30)
    assert "Asia/Tokyo" in answer
    printed = (tmp_path / "quickstart.log").read_text()
    assert f"http://127.0.0.1:{port}/mcp" in printed  # the endpoint,
    assert token in printed  # and the token and client configuration to paste
