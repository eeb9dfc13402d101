"""A busy database is waited for within a bound, then answers ``store_busy``; no SQL reaches a client.

Against a real SQLite file, locked by another real connection (issue #10).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import pytest

from toolcrib.errors import StoreBusy, StoreError
from toolcrib.store import handles as handle_store
from toolcrib.store.database import Database
from toolcrib.store.handles import HandleRow

pytestmark = pytest.mark.anyio

BOUND = 0.6


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'busy.db'}", busy_seconds=BOUND)
    await database.migrate()
    yield database
    await database.close()


@contextmanager
def write_locked(db: Database) -> Iterator[sqlite3.Connection]:
    """Another connection holding the file's write lock until the block ends."""
    path = db.url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path, timeout=10, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        try:
            yield other
        finally:
            other.execute("ROLLBACK")


def handle(n: int) -> HandleRow:
    return HandleRow(f"h{n}", "alice", "desk__echo_message", "hash", 1.0)


async def test_r3_3_a_write_lock_held_past_the_bound_answers_store_busy(db: Database) -> None:
    with write_locked(db), anyio.fail_after(10 * BOUND), pytest.raises(StoreBusy) as caught:
        await handle_store.insert_handles(db, [handle(1)])
    assert caught.value.code == "store_busy"
    assert "INSERT" not in caught.value.message
    await handle_store.insert_handles(db, [handle(1)])  # the store is usable again at once
    assert await handle_store.get_handle(db, "h1") is not None


async def test_r3_3_a_write_lock_released_within_the_bound_is_waited_for(db: Database) -> None:
    done = anyio.Event()

    async def insert() -> None:
        await handle_store.insert_handles(db, [handle(2)])
        done.set()

    async with anyio.create_task_group() as tg:
        with write_locked(db):
            tg.start_soon(insert)
            await anyio.sleep(BOUND / 3)  # the lock stays held a while; the insert must be waiting
            assert not done.is_set()
        with anyio.fail_after(10 * BOUND):  # released: the waiting insert goes through
            await done.wait()
    assert done.is_set()
    assert await handle_store.get_handle(db, "h2") is not None


async def test_r3_3_a_database_error_is_a_store_error_without_sql(db: Database) -> None:
    await handle_store.insert_handles(db, [handle(3)])
    with pytest.raises(StoreError) as caught:
        await handle_store.insert_handles(db, [handle(3)])  # the same primary key again
    assert caught.value.code == "store_error"
    assert not isinstance(caught.value, StoreBusy)
    for leaked in ("INSERT", "handles", "UNIQUE", "sqlite"):
        assert leaked not in caught.value.message
