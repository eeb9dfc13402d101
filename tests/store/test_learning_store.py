"""Search examples in the store (R-5.12, #23): bounded per tool and per member, the same member's
same text refreshed not repeated, dropped with a changed definition and with the connection, the
searches purged with their handles. On SQLite and on PostgreSQL (the tool lock differs)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import anyio
import numpy as np
import pytest
from sqlalchemy import select

from toolcrib.search.usage import MAX_EXAMPLES, MAX_PER_MEMBER
from toolcrib.store import connections as conn_store
from toolcrib.store import learning as store
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.database import Database
from toolcrib.store.handles import HandleRow, get_handle, insert_handles
from toolcrib.store.learning import SearchRow
from toolcrib.store.tables import audit

pytestmark = pytest.mark.anyio

NOW = 1_760_000_000.0
TOOL = "desk__echo_message"


@pytest.fixture
async def db(store_url: str) -> AsyncIterator[Database]:
    database = Database(store_url, busy_seconds=30)
    await database.migrate()
    for name in ("desk", "crm"):
        await conn_store.insert_connection(
            database,
            ConnectionRow(name, "Helpdesk", "http", None, "http://x/mcp", None, "active", None, 0, 0),
        )
    yield database
    await database.close()


def _vector(seed: int) -> bytes:
    v = np.random.default_rng(seed).standard_normal(384).astype("<f4")
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


async def _search(db: Database, n: int, member: str, text: str, at: float = NOW) -> str:
    """A search that issued one handle, as ``issue_handles`` stores it; its id."""
    sid = f"srch_{n:08d}"
    row = SearchRow(sid, member, _vector(n), hashlib.sha256(text.encode()).hexdigest(), None, at)
    await insert_handles(db, [HandleRow(f"act_{n:08d}", member, TOOL, "h", at, sid)], row)
    return sid


async def _record(
    db: Database, sid: str, member: str, at: float, tool: str = TOOL
) -> list[store.Example] | None:
    account, _, name = tool.partition("__")
    return await store.record_example(
        db,
        search_id=sid,
        account=account,
        tool=name,
        public_name=tool,
        member=member,
        now=at,
        per_tool=MAX_EXAMPLES,
        per_member=MAX_PER_MEMBER,
    )


async def test_r5_12_a_handle_remembers_the_search_that_issued_it(db: Database) -> None:
    sid = await _search(db, 1, "ada", "mirror my text")
    handle = await get_handle(db, "act_00000001")
    assert handle is not None
    assert handle.search_id == sid


async def test_r5_12_one_tool_keeps_its_newest_64_examples(db: Database) -> None:
    for n in range(70):  # 10 members, 7 texts each: no member reaches 16
        sid = await _search(db, n, f"m{n % 10}", f"text {n}")
        kept = await _record(db, sid, f"m{n % 10}", NOW + n)
    assert kept is not None
    assert len(kept) == MAX_EXAMPLES == 64
    assert min(e.created_at for e in kept) == NOW + 6  # the six oldest went
    assert len((await store.load_examples(db))[TOOL]) == 64


async def test_r5_12_one_member_holds_at_most_16_examples_of_a_tool(db: Database) -> None:
    for n in range(20):
        await _record(db, await _search(db, n, "eve", f"steer {n}"), "eve", NOW + n)
    for n in range(20, 25):
        await _record(db, await _search(db, n, "ada", f"ask {n}"), "ada", NOW + n)
    rows = (await store.load_examples(db))[TOOL]
    by_member = {m: [e for e in rows if e.member == m] for m in ("eve", "ada")}
    assert len(by_member["eve"]) == MAX_PER_MEMBER == 16
    assert min(e.created_at for e in by_member["eve"]) == NOW + 4  # eve's newest 16
    assert len(by_member["ada"]) == 5
    [count] = await store.count_examples(db)
    assert (count.public_name, count.examples, count.members) == (TOOL, 21, 2)


async def test_r5_12_the_same_members_same_text_refreshes_its_time(db: Database) -> None:
    first = await _record(db, await _search(db, 1, "ada", "mirror my text"), "ada", NOW)
    again = await _record(db, await _search(db, 2, "ada", "mirror my text", NOW + 50), "ada", NOW + 60)
    other = await _record(db, await _search(db, 3, "bob", "mirror my text", NOW + 70), "bob", NOW + 80)
    assert first is not None
    assert again is not None
    assert other is not None
    assert len(again) == 1
    assert again[0].created_at == NOW + 60
    assert again[0].id == first[0].id
    assert again[0].vector == _vector(2)  # the newer search's vector
    assert sorted(e.member for e in other) == ["ada", "bob"]  # another member's same text counts


async def test_r5_12_nothing_is_recorded_of_a_search_that_is_gone_or_had_no_vector(db: Database) -> None:
    assert await _record(db, "srch_unknown", "ada", NOW) is None
    row = SearchRow("srch_novector", "ada", None, "0" * 64, None, NOW)
    await insert_handles(db, [HandleRow("act_nov", "ada", TOOL, "h", NOW, row.id)], row)
    assert await _record(db, row.id, "ada", NOW) is None
    assert await store.load_examples(db) == {}


async def test_r5_12_searches_are_purged_with_their_handles(db: Database) -> None:
    old = await _search(db, 1, "ada", "old", at=NOW - 700)
    new = await _search(db, 2, "ada", "new", at=NOW)
    assert await store.purge_searches(db, NOW - 600) == 1
    assert await _record(db, old, "ada", NOW) is None
    assert await _record(db, new, "ada", NOW) is not None


async def test_r5_12_examples_go_with_their_connection(db: Database) -> None:
    await _record(db, await _search(db, 1, "ada", "a"), "ada", NOW)
    await _record(db, await _search(db, 2, "ada", "b"), "ada", NOW, tool="crm__find_contact")
    assert await conn_store.delete_connection(db, "desk")
    assert set(await store.load_examples(db)) == {"crm__find_contact"}  # ON DELETE CASCADE


async def test_r5_12_a_changed_definition_drops_that_tools_examples_only(db: Database) -> None:
    await _record(db, await _search(db, 1, "ada", "a"), "ada", NOW)
    await _record(db, await _search(db, 2, "ada", "b"), "ada", NOW, tool="desk__add_numbers")
    async with db.begin() as conn:
        assert await store.delete_tool_examples(conn, [TOOL, "desk__never_learned"]) == 1
    assert set(await store.load_examples(db)) == {"desk__add_numbers"}


async def test_r5_12_concurrent_recordings_keep_the_bounds(db: Database) -> None:
    sids = [await _search(db, n, "eve", f"t{n}") for n in range(24)]
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for n, sid in enumerate(sids):
                tg.start_soon(_record, db, sid, "eve", NOW + n)
    assert len((await store.load_examples(db))[TOOL]) == MAX_PER_MEMBER


async def test_r5_12_an_admins_forget_and_its_audit_row_are_one_transaction(db: Database) -> None:
    await _record(db, await _search(db, 1, "ada", "a"), "ada", NOW)
    await _record(db, await _search(db, 2, "ada", "b"), "ada", NOW, tool="desk__add_numbers")
    row = {
        "member": "owner",
        "grant_id": "cli",
        "account": "desk",
        "connector": "Helpdesk",
        "operation": "toolcrib__search__forget",
        "classification": "destructive",
        "approved": True,
        "target_id": TOOL,
        "started_at": NOW,
        "outcome": "ok",
        "finished_at": NOW,
        "duration_ms": 0.0,
        "kind": "admin",
    }
    assert await store.forget_examples(db, TOOL, row) == 1
    assert set(await store.load_examples(db)) == {"desk__add_numbers"}
    assert await store.forget_examples(db, None, {**row, "target_id": None}) == 1
    assert await store.load_examples(db) == {}
    async with db.read() as conn:
        acts = (await conn.execute(select(audit.c.target_id).where(audit.c.kind == "admin"))).all()
    assert [a.target_id for a in acts] == [TOOL, None]
