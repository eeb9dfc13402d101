"""Queries on approval rules and approvals (#14): which calls need an approval, and the approvals.

An approval is single-use: it moves ``pending -> approved -> used`` (or ``pending -> declined``)
by conditional updates, so two calls racing for one approval cannot both run. The call's sealed
arguments (``arguments``) go with the update that uses or declines it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import approval_rules, approvals

__all__ = ["Approval"]


@dataclass(frozen=True, slots=True)
class Approval:
    id: str
    member: str
    operation: str
    arguments_sha256: str
    status: str
    approved_by: str | None
    created_at: float
    expires_at: float
    arguments: str | None = None  # the call's exact arguments, sealed (SecretBox); None once spent

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


async def insert_rule(db: Database, values: dict[str, Any]) -> None:
    async with db.begin() as conn:
        await conn.execute(insert(approval_rules).values(created_at=time.time(), **values))


async def list_rules(db: Database) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = (await conn.execute(select(approval_rules).order_by(approval_rules.c.created_at))).all()
    return [dict(r._mapping) for r in rows]


async def delete_rules(db: Database, classification: str, account: str | None, role: str | None) -> int:
    """Delete the rules naming exactly this classification, account and role; how many went."""
    query = delete(approval_rules).where(approval_rules.c.classification == classification)
    for column, value in ((approval_rules.c.account, account), (approval_rules.c.role, role)):
        query = query.where(column.is_(None) if value is None else column == value)
    async with db.begin() as conn:
        result = await conn.execute(query)
    return int(result.rowcount or 0)


async def insert_approval(db: Database, approval: Approval) -> None:
    async with db.begin() as conn:
        await conn.execute(insert(approvals).values(**approval.to_json()))


async def get_approval(db: Database, approval_id: str) -> Approval | None:
    async with db.read() as conn:
        row = (await conn.execute(select(approvals).where(approvals.c.id == approval_id))).first()
    return Approval(**dict(row._mapping)) if row is not None else None


async def decide(db: Database, approval_id: str, *, status: str, approved_by: str | None, now: float) -> bool:
    """Move a pending, unexpired approval to ``status``; False when it was not pending any more."""
    query = (
        update(approvals)
        .where(approvals.c.id == approval_id, approvals.c.status == "pending", approvals.c.expires_at > now)
        .values(status=status, approved_by=approved_by)
    )
    if status != "approved":  # used or declined: nobody needs to read the arguments any more
        query = query.values(arguments=None)
    async with db.begin() as conn:
        result = await conn.execute(query)
    return bool(result.rowcount)


async def consume(db: Database, member: str, operation: str, arguments_sha256: str, now: float) -> str | None:
    """Use one approved, unexpired approval of exactly this call; who approved it, or None."""
    candidates = (
        select(approvals.c.id, approvals.c.approved_by)
        .where(
            approvals.c.member == member,
            approvals.c.operation == operation,
            approvals.c.arguments_sha256 == arguments_sha256,
            approvals.c.status == "approved",
            approvals.c.expires_at > now,
        )
        .order_by(approvals.c.created_at)
    )
    async with db.begin() as conn:
        for approval_id, approved_by in (await conn.execute(candidates)).all():
            used = await conn.execute(
                update(approvals)
                .where(approvals.c.id == approval_id, approvals.c.status == "approved")
                .values(status="used", arguments=None)
            )
            if used.rowcount:
                return str(approved_by)
    return None


async def list_pending(db: Database, now: float, limit: int) -> list[Approval]:
    """The approvals waiting for an answer (pending, unexpired), oldest first, at most ``limit``."""
    query = (
        select(approvals)
        .where(approvals.c.status == "pending", approvals.c.expires_at > now)
        .order_by(approvals.c.created_at)
        .limit(limit)
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [Approval(**dict(r._mapping)) for r in rows]


async def purge(db: Database, before: float) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(approvals).where(approvals.c.expires_at < before))
