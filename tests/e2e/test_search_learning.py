"""Search that learns, live (R-5.12, #23 item 5): over the real ``/mcp`` endpoint, with the fixture
upstream over HTTP and the packaged model. A phrasing for which the right tool is found but not
first; one member searches it and runs the right tool through its handle; then another member's
same phrasing finds that tool first. On SQLite (one gateway), and on PostgreSQL with two gateway
replicas (the first member on one, the second on the other: the example reaches the other
replica by LISTEN/NOTIFY, its catalog poll set far too long to explain it).

The ``first`` assertion needs the usage channel in the ranker (the lead's half of #23); the rest
(the rows recorded, each replica's index holding the example) is this branch's plumbing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import PG_SECRET_KEY, Process
from tests.e2e.inprocess import open_gateway, owner_token, serve
from tests.e2e.mcpclient import connect, gateway_payload
from tests.pg import PostgresServer
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.settings import Settings
from toolcrib.store import learning as learning_store

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

PHRASING = "mirror my text"
"""Cold, the packaged model ranks ``sized_result`` ("a text result of exactly the given number of
bytes") above ``echo_message`` for it (asserted below)."""
RIGHT = "desk__echo_message"
SCOPES = "mcp:tools mcp:read mcp:write"


@dataclass
class Replica:
    gw: Gateway
    base: str


async def _token(gw: Gateway, name: str) -> str:
    await members.add_member(gw.store, name, "member", actor=OPERATOR)
    _, token = await members.create_token(gw.store, name, SCOPES, actor=OPERATOR)
    return token


async def _search(base: str, token: str, query: str) -> list[dict[str, Any]]:
    async with connect(base, token) as client:
        result = await client.call_tool("search_tools", {"query": query, "limit": 5})
    assert not result.is_error, result
    return list(gateway_payload(result)["results"])


async def _execute(base: str, token: str, handle: str) -> Any:
    async with connect(base, token) as client:
        return await client.call_tool("execute_tool", {"action_id": handle, "arguments": {"message": "hi"}})


async def _until(check: Any, seconds: float = 15.0) -> None:
    with anyio.fail_after(seconds):
        while not check():  # noqa: ASYNC110 - the index offers a count, not an event; bounded above
            await anyio.sleep(0.05)


@asynccontextmanager
async def _replicas(settings: Settings, count: int, fixture_url: str) -> AsyncIterator[list[Replica]]:
    async with AsyncExitStack() as stack:
        gateways = [await stack.enter_async_context(open_gateway(settings)) for _ in range(count)]
        await owner_token(gateways[0])
        row = await add_connection(gateways[0], "desk", connector="Helpdesk", url=fixture_url, actor=OPERATOR)
        assert row.status == "active", row.reason
        for gw in gateways[1:]:  # told by the announcement (the poll is set to a minute)
            await _until(lambda gw=gw: gw.catalog.lookup(RIGHT) is not None)
        bases = [await stack.enter_async_context(serve(gw)) for gw in gateways]
        yield [Replica(gw, base) for gw, base in zip(gateways, bases, strict=True)]


async def _one_member_teaches_another(first: Replica, second: Replica) -> None:
    assert first.gw.meaning.up, first.gw.meaning.reason
    ada, bo = await _token(first.gw, "ada"), await _token(first.gw, "bo")
    cold = await _search(first.base, ada, PHRASING)
    names = [c["name"] for c in cold]
    assert RIGHT in names, names  # cold: found...
    assert names[0] != RIGHT, names  # ... but not first
    assert first.gw.index.examples == second.gw.index.examples == 0

    handle = next(c["action_id"] for c in cold if c["name"] == RIGHT)
    result = await _execute(first.base, ada, handle)
    assert not result.is_error, result
    await _until(lambda: first.gw.index.examples == 1)  # recorded beside the answer

    [example] = (await learning_store.load_examples(first.gw.store.db))[RIGHT]
    assert example.member == "ada"
    assert example.account == "desk"
    assert len(example.vector) == 384 * 4
    [count] = await learning_store.count_examples(first.gw.store.db)
    assert (count.public_name, count.examples, count.members) == (RIGHT, 1, 1)
    assert first.gw.index.examples == 1
    await _until(lambda: second.gw.index.examples == 1)

    warm = await _search(second.base, bo, PHRASING)
    assert next(c["name"] for c in warm) == RIGHT, [c["name"] for c in warm]


async def test_r5_12_a_phrasing_one_member_used_finds_the_tool_first_for_another_on_sqlite(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'gw.store.db'}", connect_timeout_seconds=5)
    async with _replicas(settings, 1, fixture_http.url) as [gateway]:
        await _one_member_teaches_another(gateway, gateway)


async def test_r5_12_the_example_reaches_the_other_replica_on_postgresql(
    postgres: PostgresServer, fixture_http: Process
) -> None:
    settings = Settings(
        database_url=postgres.create_database(),
        secret_key=PG_SECRET_KEY,
        connect_timeout_seconds=5,
        catalog_poll_seconds=60,  # only the announcement can explain the second replica knowing
    )
    async with _replicas(settings, 2, fixture_http.url) as [a, b]:
        await _one_member_teaches_another(a, b)
