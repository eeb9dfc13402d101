"""The process's upkeep in the background: its heartbeat, and housekeeping under a lease (R-11.1, R-15.2).

The heartbeat says this process is alive, so that calls it leaves pending read ``unknown`` only
once it is gone. Housekeeping deletes what outlived its lifetime (handles, results, approvals, the
authorization server's codes and tokens, audit entries past retention), marks calls of dead
processes ``unknown`` and forgets dead processes; one process at a time does it, holding a lease.
``process.open_gateway`` starts both loops; no use case imports this module.
"""

from __future__ import annotations

import logging

import anyio

from toolcrib.errors import StoreError
from toolcrib.gateway.audit.retention import prune_audit
from toolcrib.gateway.core import Gateway
from toolcrib.settings import Settings
from toolcrib.store import approvals as approval_store
from toolcrib.store import handles as handle_store
from toolcrib.store import instances as instance_store
from toolcrib.store import learning as learning_store
from toolcrib.store import leases as lease_store
from toolcrib.store import oauth_server as oauth_store
from toolcrib.store import results as result_store
from toolcrib.store.database import Database
from toolcrib.store.instances import Instance

__all__ = ["LEASE", "heartbeat", "housekeep", "housekeeping", "purge_expired", "recover_orphans"]

logger = logging.getLogger(__name__)

LEASE = "housekeeping"
"""The lease's name; the process gives it up when it closes (``process.open_gateway``)."""


async def heartbeat(gw: Gateway) -> None:
    """Forever: record every ``heartbeat_seconds`` that this process is alive, and recover the
    calls of processes that stopped beating."""
    while True:
        await anyio.sleep(gw.settings.heartbeat_seconds)
        try:
            await instance_store.beat(gw.store.db, gw.instance, gw.store.clock())
            await recover_orphans(gw.store.db, gw.instance, gw.store.clock(), gw.settings)
        except StoreError:
            logger.warning("heartbeat: the database is unavailable", exc_info=True)


async def housekeeping(gw: Gateway) -> None:
    """Forever: a round of ``housekeep`` every ``housekeeping_seconds``."""
    while True:
        await anyio.sleep(gw.settings.housekeeping_seconds)
        try:
            await housekeep(gw)
        except StoreError:
            logger.warning("housekeeping: the database is unavailable", exc_info=True)


async def housekeep(gw: Gateway) -> bool:
    """One round of housekeeping, if this process holds (or takes) the lease; whether it ran.

    Expired handles, stored results and rested rate-limit buckets are deleted, calls of dead
    processes read ``unknown``, and dead processes are forgotten. The lease outlives a few
    rounds, so a holder that dies is replaced after at most three intervals.
    """
    db, settings = gw.store.db, gw.settings
    now = gw.store.clock()
    if not gw.buckets.shared:  # this process's own rate-limit buckets: its own to prune
        await gw.buckets.prune(now)
    ttl = 3 * settings.housekeeping_seconds
    if not await lease_store.acquire(db, LEASE, gw.instance.id, now=now, ttl=ttl):
        return False
    # The lease says whose turn it is; on PostgreSQL the advisory lock also keeps a holder
    # paused past its lease from running beside the next one.
    async with db.exclusive(LEASE) as alone:
        if not alone:
            return False
        await purge_expired(db, gw.store.clock(), settings)
        if gw.buckets.shared:
            await gw.buckets.prune(gw.store.clock())
        await recover_orphans(db, gw.instance, gw.store.clock(), settings)
        stale_before = gw.store.clock() - 3 * settings.heartbeat_seconds
        await instance_store.prune(db, gw.instance, stale_before=stale_before)
        await prune_audit(db, gw.store.clock(), settings.audit_retention_days)  # retention
    return True


async def recover_orphans(db: Database, me: Instance, now: float, settings: Settings) -> int:
    """Calls left pending by a gateway process that is gone read ``unknown`` (R-11.1): one silent
    for three heartbeats, or one on this host whose process id is gone; how many."""
    stale_before = now - 3 * settings.heartbeat_seconds
    return await instance_store.recover_orphans(db, me, stale_before=stale_before)


async def purge_expired(db: Database, now: float, settings: Settings) -> None:
    """Forget action handles and stored results past their lifetime (R-5.10, R-12.3), and the
    authorization server's expired codes, tokens and single-use values, and the clients that
    registered but never got a grant within ``oauth_unused_client_days`` (R-7.7)."""
    await handle_store.purge_handles(db, now - settings.handle_ttl_seconds)
    await learning_store.purge_searches(db, now - settings.handle_ttl_seconds)
    await result_store.purge_results(db, now - settings.result_ttl_seconds)
    await approval_store.purge(db, now)
    await oauth_store.purge(db, now, now - settings.oauth_unused_client_days * 86400)
