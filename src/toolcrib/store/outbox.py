"""The audit stream's outbox (R-11.4): what each sink has still to receive, durable in the store.

An audit entry gets one row per configured sink in the transaction that makes it final (see
migration 0010), so an entry cannot be final without its rows, nor rows exist for an entry that
is not. A deliverer claims a sink's due rows (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so two
processes never take the same batch; the claim itself is a ``next_at`` moved past the delivery's
timeout, so it needs no transaction held across the network and dies with a dead deliverer), then
deletes them once the sink answered, or pushes them back by the sink's back-off.

The sinks an entry fans out to are a property of the database a process writes to
(:func:`use_sinks`), so every writer of an audit row in the store (the call's group commit, an
admin act, a pin verdict, the authorization server, orphan recovery) adds the same rows without
each caller passing them down. Times here are wall-clock (``time.time``): delivery is about the
real world's clock, not a test's injected one.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.store.database import Database
from toolcrib.store.tables import audit, audit_outbox

__all__ = ["Backlog", "Claimed", "claim", "delivered", "has_due", "postpone", "sinks_of", "use_sinks"]


def use_sinks(db: Database, sinks: Iterable[str]) -> None:
    """Entries made final through ``db`` from now on fan out to ``sinks`` (none: no rows at all)."""
    db.audit_sinks = tuple(sinks)


def sinks_of(db: Database) -> tuple[str, ...]:
    return db.audit_sinks


def rows_for(db: Database, audit_ids: Sequence[int]) -> list[dict[str, Any]]:
    """The outbox rows of entries ``audit_ids`` just made final: one per entry and sink, the same
    ``event_id`` for every sink of an entry. Empty when no sink is configured."""
    sinks = sinks_of(db)
    if not sinks or not audit_ids:
        return []
    now = time.time()
    rows: list[dict[str, Any]] = []
    for audit_id in audit_ids:
        event_id = str(uuid.uuid4())
        rows.extend(
            {
                "audit_id": audit_id,
                "sink": s,
                "event_id": event_id,
                "created_at": now,
                "next_at": now,
                "attempts": 0,
            }
            for s in sinks
        )
    return rows


async def add(conn: AsyncConnection, db: Database, audit_ids: Sequence[int]) -> None:
    """Inside the caller's transaction: the rows of entries ``audit_ids`` just made final."""
    rows = rows_for(db, audit_ids)
    if rows:
        await conn.execute(insert(audit_outbox), rows)


_INSERT_SQL = (
    f"INSERT INTO {audit_outbox.name} (audit_id, sink, event_id, created_at, next_at, attempts) "
    "VALUES (:audit_id, :sink, :event_id, :created_at, :next_at, :attempts)"
)


def add_raw(conn: sqlite3.Connection, db: Database, audit_ids: Sequence[int]) -> None:
    """The same on SQLite's own driver, inside the transaction ``Database.run_write`` opened."""
    rows = rows_for(db, audit_ids)
    if rows:
        conn.executemany(_INSERT_SQL, rows)


async def has_due(db: Database, sink: str) -> bool:
    """Whether ``sink`` has an event due now: a read, so an idle poll takes no write lock (SQLite
    has one for the whole file, which every call's audit write needs)."""
    due = select(audit_outbox.c.id).where(audit_outbox.c.sink == sink, audit_outbox.c.next_at <= time.time())
    async with db.read() as conn:
        return (await conn.execute(due.limit(1))).first() is not None


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claimed outbox row with its entry's fields (``entry``: the audit row as stored)."""

    outbox_id: int
    event_id: str
    attempts: int
    entry: dict[str, Any]


async def claim(db: Database, sink: str, *, limit: int, hold_seconds: float) -> list[Claimed]:
    """Up to ``limit`` due rows of ``sink``, oldest first, now hidden from other deliverers for
    ``hold_seconds`` (what a delivery may take). Rows another transaction is claiming are
    skipped on PostgreSQL; SQLite's write lock serializes claims anyway."""
    now = time.time()
    query = (
        select(
            audit_outbox.c.id.label("outbox_id"), audit_outbox.c.event_id, audit_outbox.c.attempts, *audit.c
        )
        .join(audit, audit.c.id == audit_outbox.c.audit_id)
        .where(audit_outbox.c.sink == sink, audit_outbox.c.next_at <= now)
        .order_by(audit_outbox.c.id)
        .limit(limit)
        .with_for_update(skip_locked=True, of=audit_outbox)
    )
    async with db.begin() as conn:
        rows = (await conn.execute(query)).all()
        if not rows:
            return []
        ids = [r[0] for r in rows]
        await conn.execute(
            update(audit_outbox)
            .where(audit_outbox.c.id.in_(ids))
            .values(next_at=now + hold_seconds, attempts=audit_outbox.c.attempts + 1)
        )
    return [
        Claimed(
            int(r.outbox_id),
            str(r.event_id),
            int(r.attempts) + 1,
            {c.name: r._mapping[c.name] for c in audit.c},
        )
        for r in rows
    ]


async def delivered(db: Database, outbox_ids: Sequence[int]) -> None:
    """The sink took these rows: they are gone."""
    async with db.begin() as conn:
        await conn.execute(delete(audit_outbox).where(audit_outbox.c.id.in_(list(outbox_ids))))


async def postpone(db: Database, outbox_ids: Sequence[int], until: float) -> None:
    """The sink failed: the rows are due again at ``until`` (its back-off)."""
    async with db.begin() as conn:
        await conn.execute(
            update(audit_outbox).where(audit_outbox.c.id.in_(list(outbox_ids))).values(next_at=until)
        )


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a sink has still to receive: how many events, and since when the oldest waits."""

    sink: str
    pending: int
    oldest_at: float | None


async def backlog(db: Database) -> dict[str, Backlog]:
    """Per sink with rows in the outbox (also one no longer configured, whose rows wait)."""
    query = select(audit_outbox.c.sink, func.count(), func.min(audit_outbox.c.created_at)).group_by(
        audit_outbox.c.sink
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return {str(r[0]): Backlog(str(r[0]), int(r[1]), float(r[2]) if r[2] is not None else None) for r in rows}
