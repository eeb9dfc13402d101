"""An upstream's prompts/resources list change reaches the clients of every replica (R-16.3, R-15.2,
#34): two real gateways on one database, each with its own session to the stdio fixture server.
The change is heard by the first replica's session; the second learns it through the store,
empties its kept listing and tells its own clients. On PostgreSQL by LISTEN/NOTIFY (the catalog
poll set to a minute, so only the announcement can explain it); on SQLite by the poll of the
versions the first bumped (a listing is kept 30 seconds, the test waits 20 at most).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.conftest import FIXTURE_SERVER, PG_SECRET_KEY
from tests.e2e.flow import client
from tests.e2e.inprocess import open_gateway, owner_token, serve
from tests.pg import PostgresServer
from tests.principals import OPERATOR
from tests.templates import migrated_sqlite
from toolcrib.gateway.connections.manage import add_connection, spec_of
from toolcrib.gateway.core import Gateway
from toolcrib.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

OPTIONS: dict[str, Any] = {
    "connect_timeout_seconds": 20,
    "stateless": False,  # sessions: a client is sent notifications
    "semantic": False,
}


async def _until(check: Any, seconds: float = 20.0) -> None:
    with anyio.fail_after(seconds):
        while not check():  # noqa: ASYNC110 - a list filled by the client's stream; bounded above
            await anyio.sleep(0.05)


@asynccontextmanager
async def _replicas(settings: Settings) -> AsyncIterator[tuple[Gateway, str, str, str]]:
    async with AsyncExitStack() as stack:
        a, b = [await stack.enter_async_context(open_gateway(settings)) for _ in range(2)]
        owner = await owner_token(a)
        env = {"FIXTURE_RESOURCES": "1"}
        row = await add_connection(
            a, "desk", connector="Helpdesk", command=FIXTURE_SERVER, env=env, actor=OPERATOR
        )
        assert row.status == "active", row.reason
        await _until(lambda: getattr(b.catalog.connections.get("desk"), "status", None) == "active")
        base_a, base_b = [await stack.enter_async_context(serve(gw)) for gw in (a, b)]
        yield b, owner, base_a, base_b


async def test_r16_3_a_resource_list_change_heard_by_one_replica_reaches_the_clients_of_another(
    postgres: PostgresServer,
) -> None:
    settings = Settings(
        database_url=postgres.create_database(),
        secret_key=PG_SECRET_KEY,
        catalog_poll_seconds=60,  # only the announcement can explain the second replica knowing
        **OPTIONS,
    )
    await _one_hears_the_other_tells(settings)


async def test_r16_3_replicas_on_one_sqlite_file_learn_a_resource_list_change_by_polling(
    tmp_path: Path,
) -> None:
    settings = Settings(
        database_url=migrated_sqlite(tmp_path / "gw.store.db"), catalog_poll_seconds=0.1, **OPTIONS
    )
    await _one_hears_the_other_tells(settings)


async def _one_hears_the_other_tells(settings: Settings) -> None:
    told: list[Any] = []

    async def note(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            told.append(message)

    async with (
        _replicas(settings) as (b, owner, base_a, base_b),
        client(base_b, owner, mode="legacy", message_handler=partial(note)) as on_b,
        client(base_a, owner, mode="legacy") as on_a,
    ):
        assert (await on_b.list_resources()).resources  # listed on b: b keeps the listing
        session_b = b.upstreams.session(spec_of(b, b.catalog.connections["desk"]))
        assert "resources" in session_b.listings
        grown = await on_a.call_tool("execute_tool", {"tool": "desk__grow_resources", "arguments": {}})
        assert not grown.is_error, grown  # a's session hears the upstream's list_changed
        await _until(lambda: bool(told))
        assert "resources" not in session_b.listings  # b lists again at the next need
