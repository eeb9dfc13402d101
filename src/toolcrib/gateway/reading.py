"""What a command that only reads the store opens (#33): the store and the policy snapshot.

``toolcrib connections list``, ``members list``, ``tokens list`` and ``limits list`` read rows and
decide on the policy; they run no upstream session, load no catalog and need no gateway. A
:class:`Reading` holds the parts such a read takes: the settings, the :class:`Storage` (opened
as every process opens it: migrated, the key checked) and the :class:`PolicyCache`. This module
imports neither the gateway (``core``) nor anything it composes, so such a command does not
either.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.gateway.storage import Storage, open_store
from toolcrib.settings import Settings
from toolcrib.store.database import Database

__all__ = ["Reading", "open_to_read"]


@dataclass(frozen=True, slots=True)
class Reading:
    """The parts a command that only reads the store takes: its settings, the store, the policy."""

    settings: Settings
    store: Storage
    policy: PolicyCache


@asynccontextmanager
async def open_to_read(
    settings: Settings, *, clock: Callable[[], float] = time.time
) -> AsyncIterator[Reading]:
    """The store of a command whose work only reads it (``toolcrib connections list``).

    The database is opened and migrated and the key checked as ``process.open_gateway`` does
    (:func:`~toolcrib.gateway.storage.open_store`); but this process registers no instance,
    recovers and purges nothing, loads no catalog or meaning model, runs no upstream supervisor,
    heartbeat, housekeeping, audit deliverer or follower.
    """
    db = Database(settings.database_url, busy_seconds=settings.store_busy_seconds)
    try:
        storage = Storage(db, await open_store(db, settings), clock)
        yield Reading(settings, storage, PolicyCache(storage, settings.policy_cache_seconds))
    finally:
        await db.close()
