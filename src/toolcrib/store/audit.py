"""The audit trail: append-only from the product's side (R-11.1..R-11.3).

A row is opened (``outcome='pending'``) before the upstream call and closed after it; a row left
pending by a process that is gone reads ``unknown`` (``store.instances.recover_orphans``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from typing import Any

import anyio
from sqlalchemy import bindparam, delete, insert, select, update

from toolcrib.store import outbox
from toolcrib.store.database import Database
from toolcrib.store.tables import audit, audit_outbox

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
    """``call`` (a connected tool's call, R-11.1) or ``admin`` (an administrative act, or a refused
    one such as an OAuth callback from the wrong browser, R-13.6)."""

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
                await self._db.run_write(lambda conn: _write_raw(conn, self._db, batch))
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
                await outbox.add(conn, self._db, _made_final(batch))  # the stream's rows, same transaction
        except Exception as exc:
            for op in batch:  # every call of the batch answers with the store's error
                op.error = exc
        finally:
            for op in batch:
                op.done = True


def _write_raw(conn: sqlite3.Connection, db: Database, batch: list[_Op]) -> None:
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
    outbox.add_raw(conn, db, _made_final(batch))


def _made_final(batch: list[_Op]) -> list[int]:
    """The entries this batch makes final (R-11.4): rows closed, and rows written closed (admin)."""
    final = [op.entry_id for op in batch if op.insert is not None and op.insert["outcome"] != "pending"]
    final += [op.close["b_id"] for op in batch if op.close is not None]
    return [i for i in final if i is not None]


_CLOSE_SQL = (
    f"UPDATE {audit.name} SET outcome = :b_outcome, error_code = :b_error_code, "
    "finished_at = :b_finished_at, duration_ms = :b_duration_ms WHERE id = :b_id"
)


def _writer(db: Database) -> _AuditWriter:
    """The database's one group-commit writer, made at its first audit write and held by it."""
    writer = db.audit_writer
    if not isinstance(writer, _AuditWriter):
        writer = db.audit_writer = _AuditWriter(db)
    return writer


async def search(db: Database, f: AuditFilter) -> list[AuditEntry]:
    query = _filtered(select(audit).order_by(audit.c.id.desc()).limit(f.limit), f)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [AuditEntry(**dict(r._mapping)) for r in rows]


def _filtered(query: Any, f: AuditFilter) -> Any:
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
    return query


async def page(db: Database, f: AuditFilter, *, after_id: int, size: int) -> list[AuditEntry]:
    """Up to ``size`` entries matching ``f`` with an id past ``after_id``, oldest first: an export
    pages through the table by id, so it holds one page at a time however long the trail is."""
    query = _filtered(select(audit).where(audit.c.id > after_id).order_by(audit.c.id).limit(size), f)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [AuditEntry(**dict(r._mapping)) for r in rows]


async def delete_older(db: Database, before: float, *, batch: int) -> int:
    """Delete up to ``batch`` entries started before ``before`` (R-11.4 retention), in one short
    transaction; returns how many. Never a pending entry, nor one with an outbox row left (a sink
    has not received it yet)."""
    waiting = select(audit_outbox.c.id).where(audit_outbox.c.audit_id == audit.c.id).exists()
    old = (
        select(audit.c.id)
        .where(audit.c.started_at < before, audit.c.outcome != "pending", ~waiting)
        .order_by(audit.c.id)
        .limit(batch)
    )
    async with db.begin() as conn:
        ids = list((await conn.execute(old)).scalars())
        if ids:
            await conn.execute(delete(audit).where(audit.c.id.in_(ids)))
    return len(ids)
