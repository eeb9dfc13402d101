"""The store's share of the hot path (#12), on a real SQLite file and a real PostgreSQL server (#11):
audit writes of concurrent calls share commits, and the per-call grant read does not queue behind
writers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import event

from tests.pg import read_rows
from toolcrib.store import audit as audit_store
from toolcrib.store import members as member_store
from toolcrib.store.audit import AuditEntry
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio

CALLS = 100


@pytest.fixture
async def db(store_url: str) -> AsyncIterator[Database]:
    database = Database(store_url, busy_seconds=30)
    await database.migrate()
    yield database
    await database.close()


def _entry(n: int) -> AuditEntry:
    return AuditEntry(
        member="ada",
        grant_id="grt_x",
        account="desk",
        connector="Helpdesk",
        operation="desk__echo_message",
        classification="read",
        approved=True,
        target_id=str(n),
        started_at=time.time(),
    )


async def test_r11_1_concurrent_audit_writes_share_commits_and_every_row_is_written_and_closed(
    db: Database,
) -> None:
    commits: list[str] = []
    event.listen(db.engine.sync_engine, "commit", lambda _conn: commits.append("COMMIT"))
    first = _entry(-1)
    await audit_store.open_entry(db, first)  # the audit connection exists from here on
    if db._raw_writer is not None:  # SQLite's own driver: its statements, as SQLite runs them
        db._raw_writer.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    opened: list[int] = []

    async def one_call(n: int) -> None:
        entry = _entry(n)
        entry_id = await audit_store.open_entry(db, entry)
        opened.append(entry_id)
        await anyio.lowlevel.checkpoint()
        await audit_store.close_entry(
            db, entry_id, outcome="ok", error_code=None, started=entry.started_at, finished=time.time()
        )

    async with anyio.create_task_group() as tg:
        for n in range(CALLS):
            tg.start_soon(one_call, n)

    assert len(set(opened)) == CALLS
    rows = read_rows(db.url, "SELECT outcome, count(*) FROM audit GROUP BY outcome ORDER BY outcome")
    assert rows == [("ok", CALLS), ("pending", 1)]
    assert 0 < len(commits) <= CALLS  # 2 writes per call, at most one commit per call (group commit)


async def test_r11_1_a_row_is_committed_when_open_entry_returns(db: Database) -> None:
    entry_id = await audit_store.open_entry(db, _entry(1))
    found = read_rows(db.url, f"SELECT outcome FROM audit WHERE id = {int(entry_id)}")
    assert found == [("pending",)]


async def test_r7_6_the_grant_read_of_a_call_does_not_wait_for_a_writer(db: Database) -> None:
    await member_store.insert_member(db, "ada", "member")
    await member_store.insert_grant(
        db,
        grant_id="grt_a",
        member="ada",
        kind="pat",
        token="tcp_secret",
        scopes=frozenset(),
        expires_at=None,
    )
    holding, release = anyio.Event(), anyio.Event()
    found: list[Any] = []

    async def writer() -> None:
        async with db.begin():
            holding.set()
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await holding.wait()
        with anyio.fail_after(10):  # a deadlock bound: the old read waited for the write turn (30 s)
            found.append(await member_store.find_grant_by_token(db, "tcp_secret"))
        release.set()
    assert found[0] is not None
    assert found[0][0].id == "grt_a"
