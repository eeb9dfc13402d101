"""Housekeeping on a timer under a lease, and indexes for every periodic scan (issue #10, R-15).

Real gateways on a real SQLite file; the rows are written and read back directly.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from sqlalchemy import delete, select
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.sql import ClauseElement

from tests.e2e.inprocess import open_gateway, settings_for
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.housekeeping import housekeep
from toolcrib.store import handles as handle_store
from toolcrib.store import instances as instance_store
from toolcrib.store import results as result_store
from toolcrib.store.database import Database
from toolcrib.store.handles import HandleRow
from toolcrib.store.results import ResultRow
from toolcrib.store.tables import audit, handles, instances, results

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

LONG_AGO = 1_000.0  # far past every lifetime


async def ids(gw: Gateway, table: object) -> set[str]:
    async with gw.store.db.begin() as conn:
        return set((await conn.execute(select(table.c.id))).scalars())  # type: ignore[attr-defined]


async def seed_expired(gw: Gateway) -> None:
    now = gw.store.clock()
    await handle_store.insert_handles(
        gw.store.db,
        [HandleRow("h_old", "m", "a__t", "x", LONG_AGO), HandleRow("h_new", "m", "a__t", "x", now)],
    )
    for rid, at in (("r_old", LONG_AGO), ("r_new", now)):
        await result_store.insert_result(gw.store.db, ResultRow(rid, "m", "a__t", "a", "c", "{}", at))
    ghost = instance_store.Instance(id="ins_ghost", host="elsewhere", pid=1)
    await instance_store.register(gw.store.db, ghost, LONG_AGO)
    async with gw.store.db.begin() as conn:
        row = {
            "started_at": LONG_AGO, "member": "m", "grant_id": "g", "account": "a", "connector": "c",
            "operation": "a__t", "classification": "read", "approved": True, "outcome": "pending",
            "instance": ghost.id,
        }  # fmt: skip
        await conn.execute(audit.insert().values(**row))


async def test_r15_expired_rows_vanish_while_the_gateway_runs(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, housekeeping_seconds=0.05)
    async with open_gateway(settings) as gw:
        await seed_expired(gw)  # after start-up: only a running timer can remove them
        with anyio.fail_after(15):
            while "h_old" in await ids(gw, handles) or "r_old" in await ids(gw, results):  # noqa: ASYNC110 - polling the database, bounded
                await anyio.sleep(0.05)
            while "ins_ghost" in await ids(gw, instances):  # noqa: ASYNC110 - polling the database, bounded
                await anyio.sleep(0.05)
        assert {"h_new"} <= await ids(gw, handles)
        assert {"r_new"} <= await ids(gw, results)
        assert gw.instance.id in await ids(gw, instances)
        async with gw.store.db.begin() as conn:
            assert list((await conn.execute(select(audit.c.outcome))).scalars()) == ["unknown"]


async def test_r15_only_the_lease_holder_runs_housekeeping(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)  # the timer's default interval: rounds run when called here
    async with open_gateway(settings) as first:
        async with open_gateway(settings) as second:
            assert await housekeep(first)
            await seed_expired(second)
            assert not await housekeep(second)  # the first holds the lease: nothing is purged
            assert "h_old" in await ids(second, handles)
            assert await housekeep(first)  # the holder renews it
        async with open_gateway(
            settings, clock=lambda: first.store.clock() + 4 * settings.housekeeping_seconds
        ) as late:
            assert await housekeep(late)  # the holder went silent past the lease: taken over
            assert "h_old" not in await ids(late, handles)
            assert not await housekeep(first)
    async with open_gateway(settings) as after:
        assert await housekeep(after)  # a holder that stops gives the lease up


def query_plan(db_file: Path, statement: ClauseElement) -> str:
    sql = str(statement.compile(dialect=sqlite_dialect.dialect(), compile_kwargs={"literal_binds": True}))
    with closing(sqlite3.connect(db_file)) as conn:
        return " | ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql))


async def test_r15_every_periodic_scan_uses_an_index(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'plan.db'}")
    await db.migrate()
    await db.close()
    scans = {
        "ix_audit_outcome_instance": instance_store.PENDING_OWNERS,
        "ix_handles_created_at": delete(handles).where(handles.c.created_at < 1.0),
        "ix_results_created_at": delete(results).where(results.c.created_at < 1.0),
        "ix_instances_heartbeat_at": delete(instances).where(instances.c.heartbeat_at < 1.0),
    }
    for index, statement in scans.items():
        plan = query_plan(tmp_path / "plan.db", statement)
        assert index in plan, plan
        assert "SCAN" not in plan, plan  # a search through the index, never a full table scan


async def test_r15_1_migration_0003_applies_fresh_and_from_0002(tmp_path: Path) -> None:
    fresh = Database(f"sqlite:///{tmp_path / 'fresh.db'}")
    await fresh.migrate()
    await fresh.close()
    old = Database(f"sqlite:///{tmp_path / 'old.db'}")
    await old.migrate("0002")
    await handle_store.insert_handles(old, [HandleRow("h_kept", "m", "a__t", "x", 5.0)])
    await old.migrate()
    assert await handle_store.get_handle(old, "h_kept") is not None
    await old.close()
    for name in ("fresh.db", "old.db"):
        with closing(sqlite3.connect(tmp_path / name)) as conn:
            (version,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            assert int(version) >= 3  # at the head, which 0003 precedes
            found = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('index','table')")
            }
        assert {
            "leases",
            "ix_audit_outcome_instance",
            "ix_results_created_at",
            "ix_instances_heartbeat_at",
        } <= found
