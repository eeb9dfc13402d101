"""Catalog changes made by another process reach this one through the background follower alone (#25).

A search reads the index this process holds and never the connections table: a connection the
command line (another process) added is searchable once the follower installed it, on SQLite by
its timer (``catalog_poll_seconds``), without any search to set it off. A reading of the table
that is older than this process's own change (its add, its refresh) undoes nothing of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.conftest import Process, cli
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.e2e.org import names_of
from tests.principals import OPERATOR

from toolcrib.gateway.connections.catalogs import sync_from_store
from toolcrib.gateway.connections.manage import add_connection, sync_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.search import search_tools
from toolcrib.store import connections as conn_store

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
        principal = await gw.bearers.authenticate(await owner_token(gw))
        async with open_gateway(settings, follow_changes=False) as other:
            row = await add_connection(
                other, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR
            )
        assert row.status == "active", row.reason
        for _ in range(3):
            await anyio.sleep(0.02)  # past the poll interval a search once honoured
            assert names_of(await search_tools(gw, principal, QUERY)) == []
        assert "desk" not in gw.catalog.connections
        await sync_from_store(gw)
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"


async def test_r15_2_the_sqlite_timer_installs_a_connection_the_command_line_added_without_a_search(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = settings_for(tmp_path, semantic=False, catalog_poll_seconds=0.1)
    assert settings.database_url.startswith("sqlite")
    async with open_gateway(settings) as gw:
        principal = await gw.bearers.authenticate(await owner_token(gw))
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
            while "desk" not in gw.catalog.tools:  # noqa: ASYNC110 - the follower offers no event
                await anyio.sleep(0.05)
            await _installed(gw)
        assert gw.catalog.connections["desk"].status == "active"
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"
        removed = cli(settings.database_url, "connections", "remove", "desk")
        assert removed.returncode == 0, removed.stderr
        with anyio.fail_after(10):
            while "desk" in gw.catalog.tools:  # noqa: ASYNC110 - the follower offers no event
                await anyio.sleep(0.05)
            await _installed(gw)
        assert names_of(await search_tools(gw, principal, QUERY)) == []


@asynccontextmanager
async def _a_slow_reading(gw: Gateway, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """``sync_from_store`` (the follower's step) reads the connections table on entry, and is held
    before it acts on that reading until the block has run: what the block does is newer."""
    real, read, go = conn_store.list_connections, anyio.Event(), anyio.Event()

    async def held(db: Any) -> list[conn_store.ConnectionRow]:
        rows = await real(db)
        read.set()
        await go.wait()
        return rows

    monkeypatch.setattr(conn_store, "list_connections", held)
    async with anyio.create_task_group() as tg:
        tg.start_soon(sync_from_store, gw)
        await read.wait()
        yield
        go.set()
    monkeypatch.setattr(conn_store, "list_connections", real)


async def test_r15_2_a_reading_older_than_this_process_s_add_does_not_forget_the_connection(
    tmp_path: Path, fixture_http: Process, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table was read before ``desk`` was added here: ``desk`` is missing from that reading,
    and is not gone (it once was forgotten, and its session closed under its first tools/list)."""
    settings = settings_for(tmp_path, semantic=False)
    async with open_gateway(settings, follow_changes=False) as gw:
        principal = await gw.bearers.authenticate(await owner_token(gw))
        async with _a_slow_reading(gw, monkeypatch):
            row = await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
            assert row.status == "active", row.reason
        assert gw.catalog.connections["desk"].status == "active"
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"


async def test_r15_2_a_reading_older_than_this_process_s_refresh_does_not_install_the_older_state(
    tmp_path: Path, fixture_http: Process, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process set ``desk`` to ``error``; the follower read that; meanwhile this process
    refreshed it (``active`` again, stored): the follower installs what the store holds, ``active``."""
    settings = settings_for(tmp_path, semantic=False)
    async with open_gateway(settings, follow_changes=False) as gw:
        principal = await gw.bearers.authenticate(await owner_token(gw))
        await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        await conn_store.set_status(gw.store.db, "desk", "error", "set by another process")
        async with _a_slow_reading(gw, monkeypatch):
            assert (await sync_connection(gw, "desk")).status == "active"
        assert (await conn_store.get_connection(gw.store.db, "desk")).status == "active"  # type: ignore[union-attr]
        assert gw.catalog.connections["desk"].status == "active"
        assert names_of(await search_tools(gw, principal, QUERY))[0] == "desk__add_numbers"


async def _installed(gw: Gateway) -> None:
    """Until the install (or removal) under way is done: the index is replaced after the catalog."""
    async with gw.catalog.installing:
        pass
