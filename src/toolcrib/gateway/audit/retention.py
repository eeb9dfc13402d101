"""Audit retention (R-11.4): entries older than ``audit_retention_days`` go, in bounded batches.

Run by housekeeping (one process at a time, under its lease). Each batch is one short transaction
of at most ``BATCH`` rows, and one round deletes at most ``ROUND`` rows, so a first run over years
of history neither holds the database's write lock for long nor runs for minutes; the next rounds
take the rest. An entry some sink has not received yet (its outbox row is still there), or one still
pending, is never deleted (``store.audit.delete_older``): retention waits for the stream.
"""

from __future__ import annotations

from toolcrib.store import audit as store
from toolcrib.store.database import Database

__all__ = ["prune_audit"]

BATCH = 500
ROUND = 20_000


async def prune_audit(db: Database, now: float, days: float | None) -> int:
    """One round of retention at ``now``: how many entries it deleted (none when ``days``, the
    setting ``audit_retention_days``, is None: retention off). It takes the database and the time
    alone, not the gateway: nothing else of the process matters to it."""
    if days is None:
        return 0
    before = now - days * 86_400
    deleted = 0
    while deleted < ROUND:
        done = await store.delete_older(db, before, batch=BATCH)
        deleted += done
        if done < BATCH:
            break
    return deleted
