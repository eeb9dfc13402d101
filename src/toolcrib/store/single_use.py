"""Values that may be presented once (an OIDC ``state``, #22), across every replica.

A value is kept by its SHA-256 until it expires; claiming it inserts that row, and the primary key
lets exactly one claim win even when two replicas race (``ON CONFLICT DO NOTHING RETURNING`` says
whether this insert was the one). Expired rows are swept by the claim itself, so the table stays small
without a housekeeping job of its own.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import delete

from toolcrib.store.database import Database
from toolcrib.store.tables import single_use

__all__ = ["claim"]


async def claim(db: Database, value: str, *, expires_at: float, now: float) -> bool:
    """True the first time ``value`` is claimed before it expires; False ever after."""
    digest = hashlib.sha256(value.encode()).hexdigest()
    insert = db.dialect_insert
    async with db.begin() as conn:
        await conn.execute(delete(single_use).where(single_use.c.expires_at < now))
        statement = insert(single_use).values(value_sha256=digest, expires_at=expires_at)
        # RETURNING says whether this insert was the one; rowcount is not reliable for it everywhere
        won = (
            await conn.execute(statement.on_conflict_do_nothing().returning(single_use.c.value_sha256))
        ).first()
    return won is not None
