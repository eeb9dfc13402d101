"""Gateway processes sharing one database, each with a heartbeat (R-11.1, R-15.2).

A pending audit row is read ``unknown`` only once the process that opened it is gone: its heartbeat
is stale, or it ran on this host and its process id is no longer alive, or it left no trace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sqlalchemy import and_, delete, false, insert, or_, select, update

from toolcrib.store import outbox
from toolcrib.store.database import Database
from toolcrib.store.outbox import sinks_of
from toolcrib.store.tables import audit, instances

__all__ = ["PENDING_OWNERS", "Instance"]

# The scan every heartbeat runs (served by the index ix_audit_outcome_instance).
PENDING_OWNERS = select(audit.c.instance).where(audit.c.outcome == "pending").distinct()


@dataclass(frozen=True, slots=True)
class Instance:
    id: str
    host: str
    pid: int


def _alive_here(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


async def register(db: Database, me: Instance, now: float) -> None:
    async with db.begin() as conn:
        await conn.execute(
            insert(instances).values(id=me.id, host=me.host, pid=me.pid, started_at=now, heartbeat_at=now)
        )


async def beat(db: Database, me: Instance, now: float) -> None:
    """Record that ``me`` is alive; a row pruned meanwhile (a long pause) is written again."""
    async with db.begin() as conn:
        done = await conn.execute(update(instances).where(instances.c.id == me.id).values(heartbeat_at=now))
        if not done.rowcount:
            await conn.execute(
                insert(instances).values(id=me.id, host=me.host, pid=me.pid, started_at=now, heartbeat_at=now)
            )


async def retire(db: Database, me: Instance) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(instances).where(instances.c.id == me.id))


async def recover_orphans(db: Database, me: Instance, *, stale_before: float) -> int:
    """Mark ``unknown`` every pending audit row whose process is gone; returns how many."""
    async with db.begin() as conn:
        owners = set((await conn.execute(PENDING_OWNERS)).scalars())
        if not owners:
            return 0
        known = {r.id: r for r in (await conn.execute(select(instances))).all()}
        dead = {
            owner
            for owner in owners
            if owner != me.id
            and (
                owner is None
                or owner not in known
                or known[owner].heartbeat_at < stale_before
                or (known[owner].host == me.host and not _alive_here(known[owner].pid))
            )
        }
        if not dead:
            return 0
        gone = [d for d in dead if d is not None]
        owned_by_dead = or_(
            audit.c.instance.in_(gone), audit.c.instance.is_(None) if None in dead else false()
        )
        orphaned = and_(audit.c.outcome == "pending", owned_by_dead)
        final = (
            list((await conn.execute(select(audit.c.id).where(orphaned))).scalars()) if sinks_of(db) else []
        )
        result = await conn.execute(update(audit).where(orphaned).values(outcome="unknown"))
        await outbox.add(conn, db, final)  # now final: streamed like any other
        await conn.execute(delete(instances).where(instances.c.id.in_(gone)))
    return int(result.rowcount)


async def prune(db: Database, me: Instance, *, stale_before: float) -> int:
    """Forget processes silent since ``stale_before`` (their pending calls already read unknown)."""
    async with db.begin() as conn:
        result = await conn.execute(
            delete(instances).where(instances.c.heartbeat_at < stale_before, instances.c.id != me.id)
        )
    return int(result.rowcount)
