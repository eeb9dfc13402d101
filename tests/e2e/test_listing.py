"""R-2.2 / R-2.3: tools/list never grows with what is connected."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.discovery.surface import meta_tool_definitions

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


async def _listing(base: str, token: str) -> bytes:
    async with connect(base, token) as client:
        tools = (await client.list_tools()).tools
    return json.dumps([t.model_dump(mode="json", by_alias=True) for t in tools], sort_keys=True).encode()


async def test_r2_2_tools_list_is_byte_identical_with_1_and_50_connections(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        await add_connection(gw, "desk-00", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        async with serve(gw) as base:
            with_one = await _listing(base, token)
        for i in range(1, 50):
            row = await add_connection(
                gw, f"desk-{i:02d}", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR
            )
            assert row.status == "active"
        assert sum(len(c) for c in gw.catalog.tools.values()) >= 50 * 8
        async with serve(gw) as base:
            with_fifty = await _listing(base, token)
    assert with_one == with_fifty
    assert b"desk-" not in with_fifty


@pytest.mark.parametrize("surface", ["search", "capability"])
def test_r2_3_meta_tool_definitions_stay_under_4000_bytes(surface: str) -> None:
    size = len(json.dumps(meta_tool_definitions(surface), separators=(",", ":")).encode())
    assert size < 4000


async def test_r15_2_connection_added_by_another_process_is_searchable_without_restart(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = settings_for(tmp_path, catalog_poll_seconds=0.1)
    async with open_gateway(settings) as serving, open_gateway(settings) as other:
        token = await owner_token(serving)
        assert "late" not in serving.catalog.connections
        await add_connection(other, "late", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        async with serve(serving) as base, connect(base, token) as client:
            names: list[str] = []
            with anyio.fail_after(10):  # the serving gateway's follower installs it (#25), bounded above
                while names[:1] != ["late__add_numbers"]:
                    found = (
                        await client.call_tool("search_tools", {"query": "add two numbers"})
                    ).structured_content
                    assert found is not None
                    names = [c["name"] for c in found["results"]]
                    await anyio.sleep(0.05)
