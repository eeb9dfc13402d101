"""What several gateway processes on one database rely on (R-15.2, #11), on SQLite and on a real
PostgreSQL server: atomic catalog versions, one secret key, one holder of a job at a time, and
change notifications delivered on commit."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from toolcrib.catalog.records import ExactRecord
from toolcrib.errors import ConfigError
from toolcrib.store import connections as conn_store
from toolcrib.store import keys, notify
from toolcrib.store import policy as policy_store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio

REPLICAS = 3
ROUNDS = 4


@pytest.fixture
async def dbs(store_url: str) -> AsyncIterator[list[Database]]:
    """One database opened by ``REPLICAS`` engines, as separate processes would."""
    opened = [Database(store_url, busy_seconds=30) for _ in range(REPLICAS)]
    await opened[0].migrate()
    yield opened
    for db in opened:
        await db.close()


def _connection(name: str) -> ConnectionRow:
    return ConnectionRow(
        name=name, connector="Helpdesk", transport="http", command=None, url="http://127.0.0.1:9/mcp",
        secrets=None, status="pending", reason=None, tool_count=0, catalog_version=0,
    )  # fmt: skip


def _tools(account: str, n: int) -> list[StoredTool]:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": n}}}
    records = [
        ExactRecord(
            account=account, connector="Helpdesk", name=f"tool_{i}", description="d",
            input_schema=schema, schema_hash=f"{n:064x}", aliases={},
        )
        for i in range(3)
    ]  # fmt: skip
    return [StoredTool(record=r, card=None) for r in records]


async def test_r15_2_replicas_starting_at_once_on_an_empty_database_all_migrate_it(store_url: str) -> None:
    opened = [Database(store_url, busy_seconds=30) for _ in range(REPLICAS)]
    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for db in opened:
                    tg.start_soon(db.migrate)
        assert await conn_store.list_connections(opened[-1]) == []
    finally:
        for db in opened:
            await db.close()


async def test_r15_2_concurrent_catalog_replacements_each_get_their_own_version(dbs: list[Database]) -> None:
    await conn_store.insert_connection(dbs[0], _connection("desk"))
    versions: list[int] = []

    async def replace(db: Database, n: int) -> None:
        versions.append(
            await conn_store.replace_catalog(db, "desk", _tools("desk", n), status="active", reason=None)
        )

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(ROUNDS * REPLICAS):
                tg.start_soon(replace, dbs[n % REPLICAS], n)
    total = ROUNDS * REPLICAS
    assert sorted(versions) == list(range(1, total + 1))  # no version handed out twice: none lost
    row = await conn_store.get_connection(dbs[0], "desk")
    assert row is not None
    assert row.catalog_version == total
    assert len(await conn_store.load_catalog(dbs[0], "desk")) == 3  # one whole catalog, not a mix


async def test_r15_2_a_process_with_another_secret_key_is_refused_naming_the_setting(
    dbs: list[Database],
) -> None:
    first, other = Fernet.generate_key(), Fernet.generate_key()
    await keys.check_key(dbs[0], first)
    await keys.check_key(dbs[1], first)  # the same key: a replica may start
    with pytest.raises(ConfigError) as refused:
        await keys.check_key(dbs[2], other)
    assert refused.value.code == "invalid_request"
    assert "TOOLCRIB_SECRET_KEY" in str(refused.value)


async def test_r15_2_one_process_at_a_time_holds_a_job_and_the_next_takes_its_result(
    dbs: list[Database],
) -> None:
    if dbs[0].is_sqlite:
        async with dbs[0].exclusive("job") as alone, dbs[1].exclusive("job") as also:
            assert alone  # one host, writers serialized by the file: no lock needed
            assert also
        return
    inside, release = anyio.Event(), anyio.Event()
    seen: list[tuple[str, bool, float]] = []

    async def holder() -> None:
        async with dbs[0].exclusive("job") as alone:
            seen.append(("holder", alone, time.monotonic()))
            inside.set()
            await release.wait()
        seen.append(("released", True, time.monotonic()))

    async def latecomer() -> None:
        async with dbs[1].exclusive("job", wait_seconds=30) as alone:
            seen.append(("latecomer", alone, time.monotonic()))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await inside.wait()
            async with dbs[2].exclusive("job") as third:
                assert not third  # busy, and a zero wait does not wait
            tg.start_soon(latecomer)
            while await _trying(dbs[2]) < 2:  # noqa: ASYNC110 - polling the server's view, bounded above
                await anyio.sleep(0.02)
            release.set()
    assert [(who, alone) for who, alone, _ in seen] == [
        ("holder", True),
        ("released", True),
        ("latecomer", False),
    ]
    async with dbs[2].exclusive("job") as free_again:
        assert free_again


async def _trying(db: Database) -> int:
    """Backends whose last statement tried the advisory lock (the lock's own view of who waits)."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_try_advisory_lock%'"
    async with db.read() as conn:
        return int((await conn.execute(text(query))).scalar_one())


async def _announce_then_roll_back(db: Database) -> None:
    try:
        async with db.begin() as conn:
            await notify.announce(conn, notify.CATALOG)
            raise LookupError("rolled back: nothing is announced")
    except LookupError:
        return
    raise AssertionError("the transaction was not rolled back")


async def test_r15_2_a_change_is_announced_to_listeners_when_its_transaction_commits(
    dbs: list[Database],
) -> None:
    if dbs[0].is_sqlite:
        pytest.skip("SQLite has no notifications: its processes poll (catalog_poll_seconds)")
    heard: list[str] = []
    listening, got_policy = anyio.Event(), anyio.Event()

    async def on_change(kind: str) -> None:
        heard.append(kind)
        if kind == notify.POLICY:
            got_policy.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: notify.listen(dbs[1], on_change, on_listening=listening.set))
            await listening.wait()
            await _announce_then_roll_back(dbs[0])
            await policy_store.insert_restriction(
                dbs[2],
                {"id": "rst_1", "effect": "block", "target_kind": "role", "target": "member",
                 "connector": None, "account": "desk", "tool": None},
            )  # fmt: skip
            await got_policy.wait()
            tg.cancel_scope.cancel()
    assert heard == [notify.ALL, notify.POLICY]
