"""Action handles resolve from memory without a database read, with every R-5.10 property kept (#12).

A real gateway on a real SQLite file; statements are counted on the engine itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import event
from tests.e2e.inprocess import open_gateway, settings_for

from toolcrib.errors import HandleExpired, NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal
from toolcrib.store import handles as handle_store
from toolcrib.store.handles import HandleRow

pytestmark = pytest.mark.anyio

NOW = [1_000_000.0]


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[Gateway]:
    NOW[0] = 1_000_000.0
    async with open_gateway(settings_for(tmp_path, semantic=False), lambda: NOW[0]) as gateway:
        yield gateway


def _as(member: str) -> Principal:
    return Principal(member=member, role="member", scopes=frozenset({"mcp:tools"}), grant_id="grt_test")


def _counting(gw: Gateway) -> list[str]:
    statements: list[str] = []
    event.listen(gw.store.db.engine.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    return statements


async def test_r5_10_an_issued_handle_resolves_without_a_database_read(gw: Gateway) -> None:
    [handle] = await gw.handles.issue(_as("ada"), [("desk__echo_message", "hash1")])
    statements = _counting(gw)
    row = await gw.handles.resolve(_as("ada"), handle)
    assert (row.public_name, row.schema_hash) == ("desk__echo_message", "hash1")
    assert statements == []


async def test_r5_10_a_handle_another_replica_issued_is_read_once_then_held(gw: Gateway) -> None:
    other = HandleRow("act_" + "b" * 26, "ada", "desk__echo_message", "hash1", NOW[0])
    await handle_store.insert_handles(gw.store.db, [other])  # as another replica would
    statements = _counting(gw)
    assert (await gw.handles.resolve(_as("ada"), other.id)).id == other.id
    reads = len(statements)
    assert reads >= 1
    await gw.handles.resolve(_as("ada"), other.id)
    assert len(statements) == reads


async def test_r5_10_a_held_handle_is_still_bound_to_its_member_and_expires(gw: Gateway) -> None:
    [handle] = await gw.handles.issue(_as("ada"), [("desk__echo_message", "hash1")])
    with pytest.raises(NotFound) as other_member:
        await gw.handles.resolve(_as("bob"), handle)
    assert other_member.value.code == "not_found"
    NOW[0] += gw.settings.handle_ttl_seconds + 1
    with pytest.raises(HandleExpired) as expired:
        await gw.handles.resolve(_as("ada"), handle)
    assert expired.value.code == "handle_expired"
