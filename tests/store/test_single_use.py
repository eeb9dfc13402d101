"""One-time values across replicas (#22): an OIDC ``state`` is spent once, whichever replica the
browser comes back to, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from toolcrib.store import identities, single_use
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio


@pytest.fixture
async def dbs(store_url: str) -> AsyncIterator[list[Database]]:
    opened = [Database(store_url, busy_seconds=30) for _ in range(3)]
    await opened[0].migrate()
    yield opened
    for db in opened:
        await db.close()


async def test_r7_7_a_state_presented_at_once_to_three_replicas_is_spent_exactly_once(
    dbs: list[Database],
) -> None:
    wins: list[bool] = []

    async def present(db: Database) -> None:
        wins.append(await single_use.claim(db, "oidc-state:abc", expires_at=2000.0, now=1000.0))

    async with anyio.create_task_group() as tg:
        for db in dbs * 2:
            tg.start_soon(present, db)
    assert sorted(wins) == [False] * 5 + [True]
    assert not await single_use.claim(dbs[1], "oidc-state:abc", expires_at=2000.0, now=1500.0)


async def test_r7_7_an_expired_value_is_swept_and_a_new_one_is_independent(dbs: list[Database]) -> None:
    assert await single_use.claim(dbs[0], "a", expires_at=100.0, now=50.0)
    assert await single_use.claim(dbs[0], "b", expires_at=400.0, now=300.0)  # sweeps "a"
    assert await single_use.claim(dbs[1], "a", expires_at=500.0, now=300.0)


async def test_r7_8_a_member_created_by_two_replicas_at_once_exists_once(dbs: list[Database]) -> None:
    made: list[bool] = []

    async def create(db: Database) -> None:
        made.append(
            await identities.insert_identity(
                db,
                name="ann@example.com",
                role="member",
                email="ann@example.com",
                subject="s1",
                issuer="https://idp",
                now=1.0,
            )
        )

    async with anyio.create_task_group() as tg:
        for db in dbs:
            tg.start_soon(create, db)
    assert sorted(made) == [False, False, True]
    found = await identities.find_identity(
        dbs[2], issuer="https://idp", subject="s1", email="ann@example.com"
    )
    assert [(m.name, m.source, m.role_pinned) for m in found] == [("ann@example.com", "oidc", False)]
