"""Leases: a named job run by one gateway process at a time (housekeeping, R-15.2).

A lease is a row naming its holder and when it expires. The holder renews it each time it runs;
if the holder dies, another process takes it once it has expired. Taking it is one conditional
UPDATE (or the first INSERT), atomic on SQLite (``BEGIN IMMEDIATE``) and on PostgreSQL; PostgreSQL
could instead use ``pg_try_advisory_lock`` behind these same two functions.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, or_, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import leases

__all__ = ["acquire", "release"]


async def acquire(db: Database, name: str, holder: str, *, now: float, ttl: float) -> bool:
    """Take or renew the lease ``name`` for ``holder`` until ``now + ttl``; whether it is held."""
    async with db.begin() as conn:
        taken = await conn.execute(
            update(leases)
            .where(leases.c.name == name, or_(leases.c.holder == holder, leases.c.expires_at <= now))
            .values(holder=holder, expires_at=now + ttl)
        )
        if taken.rowcount:
            return True
        if (await conn.execute(select(leases.c.name).where(leases.c.name == name))).first() is not None:
            return False
        await conn.execute(insert(leases).values(name=name, holder=holder, expires_at=now + ttl))
    return True


async def release(db: Database, name: str, holder: str) -> None:
    """Give the lease up (when its holder stops), so another process can take it at once."""
    async with db.begin() as conn:
        await conn.execute(delete(leases).where(leases.c.name == name, leases.c.holder == holder))
