"""Upstream prompts/resources list changes between processes on one SQLite file (R-16.3, R-15.2).

PostgreSQL announces such a change (``notify.announce_offerings``); SQLite cannot, so the process
whose upstream session heard it bumps a version per connection and kind here, and the other
processes' followers poll the versions with the connections table (``follower``).
"""

from __future__ import annotations

from sqlalchemy import insert, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import connections, offering_changes

__all__ = ["Version", "bump", "versions"]

Version = tuple[int, str]
"""A kind's version and the process (instance id) that bumped it last."""


async def bump(db: Database, account: str, kind: str, instance: str) -> None:
    """``account``'s ``kind`` list changed, as ``instance``'s session heard (nothing for a
    connection removed meanwhile)."""
    key = (offering_changes.c.account == account, offering_changes.c.kind == kind)
    async with db.begin() as conn:
        bumped = await conn.execute(
            update(offering_changes)
            .where(*key)
            .values(version=offering_changes.c.version + 1, instance=instance)
        )
        if bumped.rowcount:
            return
        exists = await conn.execute(select(connections.c.name).where(connections.c.name == account))
        if exists.first() is not None:
            await conn.execute(
                insert(offering_changes).values(account=account, kind=kind, version=1, instance=instance)
            )


async def versions(db: Database) -> dict[tuple[str, str], Version]:
    """Every (connection, kind)'s version and who bumped it last."""
    async with db.read() as conn:
        rows = (await conn.execute(select(offering_changes))).all()
    return {(r.account, r.kind): (int(r.version), str(r.instance)) for r in rows}
