"""What the identity provider last said about a person, across replicas (#32, R-7.11): a rotated
provider token is stored only over the one it replaced, a refused one is forgotten only if it is
still the stored one, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolcrib.store import idp_vouches
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio

BOB = "bob@example.com"
ISS = "https://idp.example"


@pytest.fixture
async def dbs(store_url: str) -> AsyncIterator[list[Database]]:
    opened = [Database(store_url, busy_seconds=30) for _ in range(2)]
    await opened[0].migrate()
    yield opened
    for db in opened:
        await db.close()


async def _sign_in(db: Database, sealed: str | None, now: float, subject: str = "bob") -> None:
    await idp_vouches.put_sign_in(db, member=BOB, issuer=ISS, subject=subject, refresh_sealed=sealed, now=now)


async def test_r7_11_a_sign_in_without_a_provider_token_keeps_the_persons_earlier_one(
    dbs: list[Database],
) -> None:
    one, two = dbs
    await _sign_in(one, "sealed-1", 100.0)
    await _sign_in(two, None, 200.0)
    vouch = await idp_vouches.get_vouch(one, BOB)
    assert vouch == idp_vouches.Vouch(BOB, ISS, "bob", "sealed-1", 200.0, 200.0)
    await _sign_in(two, None, 300.0, subject="another-bob")  # another account of the provider
    again = await idp_vouches.get_vouch(one, BOB)
    assert again is not None
    assert (again.subject, again.refresh_sealed) == ("another-bob", None)


async def test_r7_11_a_rotated_provider_token_is_stored_only_over_the_one_it_replaced(
    dbs: list[Database],
) -> None:
    one, two = dbs
    await _sign_in(one, "sealed-1", 100.0)
    await idp_vouches.vouched(one, BOB, read="sealed-1", rotated="sealed-2", now=150.0)
    await idp_vouches.vouched(two, BOB, read="sealed-1", rotated="sealed-stale", now=140.0)  # late
    vouch = await idp_vouches.get_vouch(two, BOB)
    assert vouch is not None
    assert (vouch.refresh_sealed, vouch.vouched_at) == ("sealed-2", 150.0)  # neither goes back


async def test_r7_11_a_refused_provider_token_is_forgotten_only_while_it_is_the_stored_one(
    dbs: list[Database],
) -> None:
    one, two = dbs
    await _sign_in(one, "sealed-1", 100.0)
    await idp_vouches.vouched(one, BOB, read="sealed-1", rotated="sealed-2", now=150.0)
    assert not await idp_vouches.forget(two, BOB, "sealed-1")  # another replica rotated it meanwhile
    assert await idp_vouches.get_vouch(two, BOB) is not None
    assert await idp_vouches.forget(two, BOB, "sealed-2")
    assert await idp_vouches.get_vouch(one, BOB) is None
