"""The audit trail: append-only from the product's side (R-11.1..R-11.3).

A row is opened (``outcome='pending'``) before the upstream call and closed after it; a row left
pending by a process that is gone reads ``unknown`` (``store.instances.recover_orphans``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import insert, select, update

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
    values = entry.to_json()
    values.pop("id")
    async with db.begin() as conn:
        result = await conn.execute(insert(audit).values(**values))
    pk = result.inserted_primary_key
    assert pk is not None
    entry.id = int(pk[0])
    return entry.id


async def close_entry(
    db: Database, entry_id: int, *, outcome: str, error_code: str | None, started: float, finished: float
) -> None:
    """Close a pending row; ``started`` and ``finished`` come from the same (gateway's) clock."""
    async with db.begin() as conn:
        await conn.execute(
            update(audit)
            .where(audit.c.id == entry_id)
            .values(
                outcome=outcome,
                error_code=error_code,
                finished_at=finished,
                duration_ms=(finished - started) * 1000,
            )
        )


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
