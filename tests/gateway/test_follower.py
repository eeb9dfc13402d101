"""Catalog changes made by another process reach this one through the background follower alone (#25).

A search reads the index this process holds and never the connections table: a connection the
command line (another process) added is searchable once the follower installed it, on SQLite by
its timer (``catalog_poll_seconds``), without any search to set it off.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from tests.conftest import Process, cli
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.e2e.org import names_of
from tests.principals import OPERATOR

from toolcrib.gateway.catalogs import sync_from_store
from toolcrib.gateway.connections import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import authenticate
from toolcrib.gateway.search import search_tools

pytestmark = pytest.mark.anyio

QUERY = "add two numbers"


async def test_r15_2_a_search_does_not_read_the_connections_table(
    tmp_path: Path, fixture_http: Process
) -> None:
    """No follower runs here: however often this gateway searches (with a poll interval that once
    made every search poll), a connection another process added stays unseen until
    ``sync_from_store``, the follower's step, runs."""
    settings = settings_for(tmp_path, semantic=False, catalog_poll_seconds=0.01)
    async with open_gateway(settings, follow_changes=False) as gw:
        principal = await authenticate(gw, await owner_token(gw))
        async with open_gateway(settings, follow_changes=False) as other:
            row = await add_connection(
                other, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR
            )
        assert row.status == "active", row.reason
        for _ in range(3):
            await anyio.sleep(0.02)  # past the poll interval a search once honoured
            assert names_of(await search_tools(gw, principal, QUERY)) == []
        assert "desk" not in gw.connections
        await sync_from_store(gw)
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"


async def test_r15_2_the_sqlite_timer_installs_a_connection_the_command_line_added_without_a_search(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = settings_for(tmp_path, semantic=False, catalog_poll_seconds=0.1)
    assert settings.database_url.startswith("sqlite")
    async with open_gateway(settings) as gw:
        principal = await authenticate(gw, await owner_token(gw))
        added = cli(
            settings.database_url,
            "connections",
            "add",
            "desk",
            "--connector",
            "Helpdesk",
            "--url",
            fixture_http.url,
        )
        assert added.returncode == 0, added.stderr
        with anyio.fail_after(10):  # the timer's next round, bounded above; no search in between
            while "desk" not in gw.catalogs:  # noqa: ASYNC110 - the follower offers no event
                await anyio.sleep(0.05)
            await _installed(gw)
        assert gw.connections["desk"].status == "active"
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"
        removed = cli(settings.database_url, "connections", "remove", "desk")
        assert removed.returncode == 0, removed.stderr
        with anyio.fail_after(10):
            while "desk" in gw.catalogs:  # noqa: ASYNC110 - the follower offers no event
                await anyio.sleep(0.05)
            await _installed(gw)
        assert names_of(await search_tools(gw, principal, QUERY)) == []


async def _installed(gw: Gateway) -> None:
    """Until the install (or removal) under way is done: the index is replaced after the catalog."""
    async with gw.installing:
        pass
