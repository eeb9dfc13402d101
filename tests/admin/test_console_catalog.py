"""The console's Add from catalog page (#35, R-13.9), on SQLite and PostgreSQL: search the
registries, add an entry with its inputs (a secret one in a password field, sealed and never shown
again, the registry entry recorded on the connection)."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.admin.console import Console, console
from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, serve_asgi, settings_for
from tests.fixtures.registry_server import load_entries, registry_app
from toolcrib.store import connections as store

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


@asynccontextmanager
async def _console(tmp_path: Path, remote_url: str) -> AsyncIterator[tuple[Console, str]]:
    app = registry_app(load_entries(remote_url, "/nonexistent/marker"))
    async with serve_asgi(app) as registry:
        settings = settings_for(tmp_path, policy_cache_seconds=0, semantic=False, registry_url=[registry])
        async with open_gateway(settings) as gw, console(gw) as c:
            yield c, await owner_token(gw)


async def test_r13_9_the_catalog_page_searches_and_adds_a_remote_with_its_secret_sealed(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with _console(tmp_path, fixture_http.url) as (c, owner):
        http, csrf = await c.signed_in(owner)
        found = await http.get("/admin/catalog", params={"q": "clock"})
        assert found.status_code == 200
        page = html.unescape(found.text)
        assert "io.github.example/remote-clock" in page
        assert 'name="input.api_key" type="password"' in page
        legacy = html.unescape((await http.get("/admin/catalog", params={"q": "time"})).text)
        assert "io.github.example/time-legacy" not in legacy  # deleted: never offered
        form = {"csrf": csrf, "name": "rc", "from_registry": "io.github.example/remote-clock@1.1.0"}
        missing = await http.post("/admin/catalog/add", data=form)
        assert "needs_input" in missing.text
        assert await store.get_connection(c.gw.store.db, "rc") is None
        added = await http.post("/admin/catalog/add", data={**form, "input.api_key": "console-s3cret-2718"})
        assert added.status_code == 303
        assert added.headers["location"] == "/admin/connections?done=connection_created"
        row = await store.get_connection(c.gw.store.db, "rc")
        assert row is not None
        assert row.status == "active"
        assert row.registry_version == "1.1.0"
        listing = await http.get("/admin/connections")
        assert "console-s3cret-2718" not in listing.text
        assert row.secrets is not None
        assert "console-s3cret-2718" not in row.secrets
