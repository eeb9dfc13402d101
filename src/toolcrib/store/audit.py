"""The audit trail: append-only from the product's side (R-11.1..R-11.3).

A row is opened (``outcome='pending'``) before the upstream call and closed after it; a row left
pending by a process that is gone reads ``unknown`` (``store.instances.recover_orphans``).
"""

from __future__ import annotations

import sqlite3
import weakref
from dataclasses import dataclass, fields
from typing import Any

import anyio
from sqlalchemy import bindparam, insert, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import audit

__all__ = ["AuditEntry", "AuditFilter"]


@dataclass(slots=True)
class AuditEntry:
    member: str
    grant_id: str
    account: str
    connector: str
    operation: str
    classification: str
    approved: bool
    target_id: str | None
    started_at: float
    outcome: str = "pending"
    finished_at: float | None = None
    duration_ms: float | None = None
    error_code: str | None = None
    instance: str | None = None
    id: int | None = None
    approved_by: str | None = None
    kind: str = "call"
    """``call`` (a tool call) or ``admin`` (an administrator's decision, e.g. accepting a change)."""

    def to_json(self) -> dict[str, Any]:
        # Every field is a scalar: a plain read, not ``asdict``'s recursive deep copy (#12: that
        # copy was a tenth of the gateway's own CPU on each call).
        return {name: getattr(self, name) for name in _ENTRY_FIELDS}


_ENTRY_FIELDS = tuple(f.name for f in fields(AuditEntry))


@dataclass(frozen=True, slots=True)
class AuditFilter:
    member: str | None = None
    account: str | None = None
    operation: str | None = None
    outcome: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = 100


async def open_entry(db: Database, entry: AuditEntry) -> int:
    """Insert ``entry`` as pending; committed (durable) when this returns (R-11.1)."""
    values = entry.to_json()
    values.pop("id")
    op = _Op(insert=values)
    await _writer(db).submit(op)
    assert op.entry_id is not None
    entry.id = op.entry_id
    return entry.id


async def close_entry(
    db: Database, entry_id: int, *, outcome: str, error_code: str | None, started: float, finished: float
) -> None:
    """Close a pending row; ``started`` and ``finished`` come from the same (gateway's) clock."""
    values = {
        "b_id": entry_id,
        "b_outcome": outcome,
        "b_error_code": error_code,
        "b_finished_at": finished,
        "b_duration_ms": (finished - started) * 1000,
    }
    await _writer(db).submit(_Op(close=values))


# --- group commit -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Op:
    insert: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    entry_id: int | None = None
    done: bool = False
    error: BaseException | None = None


_CLOSE = (
    update(audit)
    .where(audit.c.id == bindparam("b_id"))
    .values(
        outcome=bindparam("b_outcome"),
        error_code=bindparam("b_error_code"),
        finished_at=bindparam("b_finished_at"),
        duration_ms=bindparam("b_duration_ms"),
    )
)


class _AuditWriter:
    """Audit writes of concurrent calls share transactions (group commit, #12).

    A call puts its write in the queue and takes the writer's turn; whoever holds the turn writes
    every queued write in one transaction and commits it, and each call returns only once the
    transaction holding its write has committed — so a row is durable before its call goes
    upstream, exactly as with one transaction per row. Writes queued meanwhile go in the next
    transaction; a call whose write an earlier turn already committed returns at once.
    The write is shielded: a cancelled call still learns whether its row was written.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._queue: list[_Op] = []
        self._turn = anyio.Lock()

    async def submit(self, op: _Op) -> None:
        self._queue.append(op)
        with anyio.CancelScope(shield=True):
            async with self._turn:
                if not op.done:
                    batch, self._queue = self._queue, []
                    await self._write(batch)
        if op.error is not None:
            raise op.error

    async def _write(self, batch: list[_Op]) -> None:
        try:
            if self._db.is_sqlite:
                await self._db.run_write(lambda conn: _write_raw(conn, batch))
                return
            async with self._db.begin() as conn:
                inserts = [(op, op.insert) for op in batch if op.insert is not None]
                if inserts:  # one statement for the batch, ids in the order of its rows
                    returning = insert(audit).returning(audit.c.id, sort_by_parameter_order=True)
                    ids = (await conn.execute(returning, [values for _, values in inserts])).scalars().all()
                    for (op, _), entry_id in zip(inserts, ids, strict=True):
                        op.entry_id = int(entry_id)
                closes = [op.close for op in batch if op.close is not None]
                if closes:
                    await conn.execute(_CLOSE, closes)
        except Exception as exc:
            for op in batch:  # every call of the batch answers with the store's error
                op.error = exc
        finally:
            for op in batch:
                op.done = True


def _write_raw(conn: sqlite3.Connection, batch: list[_Op]) -> None:
    """The batch on SQLite's own driver, inside the transaction ``run_write`` opened."""
    for op in batch:
        if op.insert is not None:
            columns = list(op.insert)
            sql = f"INSERT INTO {audit.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            cursor = conn.execute(sql, [op.insert[c] for c in columns])
            assert cursor.lastrowid is not None
            op.entry_id = int(cursor.lastrowid)
    closes = [op.close for op in batch if op.close is not None]
    if closes:
        conn.executemany(_CLOSE_SQL, closes)


_CLOSE_SQL = (
    f"UPDATE {audit.name} SET outcome = :b_outcome, error_code = :b_error_code, "
    "finished_at = :b_finished_at, duration_ms = :b_duration_ms WHERE id = :b_id"
)

_writers: weakref.WeakKeyDictionary[Database, _AuditWriter] = weakref.WeakKeyDictionary()


def _writer(db: Database) -> _AuditWriter:
    writer = _writers.get(db)
    if writer is None:
        writer = _writers[db] = _AuditWriter(db)
    return writer


async def search(db: Database, f: AuditFilter) -> list[AuditEntry]:
    query = select(audit).order_by(audit.c.id.desc()).limit(f.limit)
    for column, value in (
        (audit.c.member, f.member),
        (audit.c.account, f.account),
        (audit.c.operation, f.operation),
        (audit.c.outcome, f.outcome),
    ):
        if value is not None:
            query = query.where(column == value)
    if f.since is not None:
        query = query.where(audit.c.started_at >= f.since)
    if f.until is not None:
        query = query.where(audit.c.started_at <= f.until)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [AuditEntry(**dict(r._mapping)) for r in rows]
