"""Audit retention (R-11.4): entries older than ``audit_retention_days`` go, in bounded batches.

Run by housekeeping (one process at a time, under its lease). Each batch is one short transaction
of at most ``BATCH`` rows, and one round deletes at most ``ROUND`` rows, so a first run over years
of history neither holds the database's write lock for long nor runs for minutes; the next rounds
take the rest. An entry some sink has not received yet (its outbox row is still there), or one still
pending, is never deleted (``store.audit.delete_older``): retention waits for the stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcrib.store import audit as store

if TYPE_CHECKING:
    from toolcrib.gateway.core import Gateway

__all__ = ["prune_audit"]

BATCH = 500
ROUND = 20_000


async def prune_audit(gw: Gateway) -> int:
    """One round of retention; how many entries it deleted (none when retention is off)."""
    days = gw.settings.audit_retention_days
    if days is None:
        return 0
    before = gw.clock() - days * 86_400
    deleted = 0
    while deleted < ROUND:
        done = await store.delete_older(gw.db, before, batch=BATCH)
        deleted += done
        if done < BATCH:
            break
    return deleted
