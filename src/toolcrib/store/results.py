"""Stored results: a cut result kept in full for a limited time (R-12.3)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from toolcrib.store.database import Database
from toolcrib.store.tables import results

__all__ = ["ResultRow"]


@dataclass(frozen=True, slots=True)
class ResultRow:
    id: str
    member: str
    operation: str
    account: str
    connector: str
    payload: str
    created_at: float


async def insert_result(db: Database, row: ResultRow) -> None:
    async with db.begin() as conn:
        await conn.execute(
            insert(results).values(
                id=row.id,
                member=row.member,
                operation=row.operation,
                account=row.account,
                connector=row.connector,
                payload=row.payload,
                created_at=row.created_at,
            )
        )


async def get_result(db: Database, result_id: str) -> ResultRow | None:
    async with db.read() as conn:
        r = (await conn.execute(select(results).where(results.c.id == result_id))).first()
    if r is None:
        return None
    return ResultRow(r.id, r.member, r.operation, r.account, r.connector, r.payload, r.created_at)


async def purge_results(db: Database, older_than: float) -> int:
    async with db.begin() as conn:
        result = await conn.execute(delete(results).where(results.c.created_at < older_than))
    return int(result.rowcount)
