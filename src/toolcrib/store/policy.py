"""Queries on restrictions, frozen parameters and classification overrides."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, insert, null, select

from toolcrib.store.database import Database
from toolcrib.store.notify import POLICY, announce
from toolcrib.store.tables import frozen, overrides, restrictions

__all__: list[str] = []


async def insert_restriction(db: Database, values: dict[str, Any]) -> None:
    async with db.begin() as conn:
        await conn.execute(insert(restrictions).values(created_at=time.time(), **values))
        await announce(conn, POLICY)


async def list_restrictions(db: Database) -> list[dict[str, Any]]:
    async with db.begin() as conn:
        rows = (await conn.execute(select(restrictions).order_by(restrictions.c.created_at))).all()
    return [dict(r._mapping) for r in rows]


async def delete_restriction(db: Database, rule_id: str) -> bool:
    async with db.begin() as conn:
        result = await conn.execute(delete(restrictions).where(restrictions.c.id == rule_id))
        await announce(conn, POLICY)
    return bool(result.rowcount)


async def set_frozen(
    db: Database, account: str, tool: str, param: str, *, value: Any = None, sealed: str | None = None
) -> None:
    """Freeze ``param`` to ``value``, or, secret (R-9.2), to the value ``sealed`` holds: a secret
    row keeps ``value`` NULL, so its plain text is never written."""
    async with db.begin() as conn:
        await conn.execute(
            delete(frozen).where(frozen.c.account == account, frozen.c.tool == tool, frozen.c.param == param)
        )
        secret = sealed is not None
        row = {"value": null() if secret else value, "secret": secret, "sealed": sealed}
        await conn.execute(insert(frozen).values(account=account, tool=tool, param=param, **row))
        await announce(conn, POLICY)


async def unset_frozen(db: Database, account: str, tool: str, param: str) -> bool:
    async with db.begin() as conn:
        result = await conn.execute(
            delete(frozen).where(frozen.c.account == account, frozen.c.tool == tool, frozen.c.param == param)
        )
        await announce(conn, POLICY)
    return bool(result.rowcount)


async def list_frozen(db: Database) -> list[dict[str, Any]]:
    """Every row, a secret one with its ``secret`` flag and ``sealed`` text (the gateway unseals)."""
    async with db.begin() as conn:
        rows = (
            await conn.execute(select(frozen).order_by(frozen.c.account, frozen.c.tool, frozen.c.param))
        ).all()
    return [dict(r._mapping) for r in rows]


async def set_override(db: Database, account: str, tool: str, risk: str) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(overrides).where(overrides.c.account == account, overrides.c.tool == tool))
        await conn.execute(insert(overrides).values(account=account, tool=tool, risk=risk))
        await announce(conn, POLICY)


async def list_overrides(db: Database) -> list[dict[str, Any]]:
    async with db.begin() as conn:
        rows = (await conn.execute(select(overrides))).all()
    return [dict(r._mapping) for r in rows]


async def delete_override(db: Database, account: str, tool: str) -> bool:
    async with db.begin() as conn:
        result = await conn.execute(
            delete(overrides).where(overrides.c.account == account, overrides.c.tool == tool)
        )
        await announce(conn, POLICY)
    return bool(result.rowcount)
