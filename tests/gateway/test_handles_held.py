"""Action handles resolve from memory without a database read, with every R-5.10 property kept (#12).

The handles part alone (#33: a use case takes the parts it uses) over a real, migrated SQLite file;
no gateway is opened. Statements are counted on the engine itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import event
from tests.templates import migrated_sqlite

from toolcrib.errors import HandleExpired, NotFound
from toolcrib.gateway.discovery.handles import HeldHandles
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import handles as handle_store
from toolcrib.store.crypto import SecretBox
from toolcrib.store.database import Database
from toolcrib.store.handles import HandleRow

pytestmark = pytest.mark.anyio

NOW = [1_000_000.0]
TTL = 600.0


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[Storage]:
    NOW[0] = 1_000_000.0
    db = Database(migrated_sqlite(tmp_path / "org.db"))
    try:
        yield Storage(db, SecretBox(Fernet.generate_key()), lambda: NOW[0])
    finally:
        await db.close()


@pytest.fixture
def handles(storage: Storage) -> HeldHandles:
    return HeldHandles(storage, TTL)


def _as(member: str) -> Principal:
    return Principal(member=member, role="member", scopes=frozenset({"mcp:tools"}), grant_id="grt_test")


def _counting(storage: Storage) -> list[str]:
    statements: list[str] = []
    event.listen(storage.db.engine.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    return statements


async def test_r5_10_an_issued_handle_resolves_without_a_database_read(
    storage: Storage, handles: HeldHandles
) -> None:
    [handle] = await handles.issue(_as("ada"), [("desk__echo_message", "hash1")])
    statements = _counting(storage)
    row = await handles.resolve(_as("ada"), handle)
    assert (row.public_name, row.schema_hash) == ("desk__echo_message", "hash1")
    assert statements == []


async def test_r5_10_a_handle_another_replica_issued_is_read_once_then_held(
    storage: Storage, handles: HeldHandles
) -> None:
    other = HandleRow("act_" + "b" * 26, "ada", "desk__echo_message", "hash1", NOW[0])
    await handle_store.insert_handles(storage.db, [other])  # as another replica would
    statements = _counting(storage)
    assert (await handles.resolve(_as("ada"), other.id)).id == other.id
    reads = len(statements)
    assert reads >= 1
    await handles.resolve(_as("ada"), other.id)
    assert len(statements) == reads


async def test_r5_10_a_held_handle_is_still_bound_to_its_member_and_expires(
    storage: Storage, handles: HeldHandles
) -> None:
    [handle] = await handles.issue(_as("ada"), [("desk__echo_message", "hash1")])
    with pytest.raises(NotFound) as other_member:
        await handles.resolve(_as("bob"), handle)
    assert other_member.value.code == "not_found"
    NOW[0] += TTL + 1
    with pytest.raises(HandleExpired) as expired:
        await handles.resolve(_as("ada"), handle)
    assert expired.value.code == "handle_expired"
