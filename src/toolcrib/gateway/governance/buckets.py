"""Where this process spends rate-limit calls (R-7.10): the store's shared buckets, or its own.

On PostgreSQL every replica spends from the ``rate_buckets`` table (``store.rate_limits.spend``: one
statement per limited call); on SQLite (one process) from a dictionary here, with no database
round trip. Both answer as ``policy.rate_limits.take`` does: None, or the refusal that waits longest,
and a refused call consumes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from toolcrib.policy.rate_limits import SLACK, Refusal, Spend, next_tat, retry_after, take
from toolcrib.store import rate_limits as store
from toolcrib.store.database import Database

__all__ = ["Buckets", "MemoryBuckets", "StoreBuckets", "buckets_for"]


class Buckets(Protocol):
    shared: bool
    """Whether every process on the database sees these buckets (else this process alone)."""

    async def take(self, wanted: Sequence[Spend], now: float) -> Refusal | None:
        """Spend one call from every bucket of ``wanted``, or from none (the refusal)."""

    async def prune(self, now: float) -> int:
        """Forget the buckets that are rested at ``now``; how many went."""


class MemoryBuckets:
    """The buckets of a single process (SQLite): a dictionary, no I/O."""

    shared = False

    def __init__(self) -> None:
        self.tat: dict[str, float] = {}

    async def take(self, wanted: Sequence[Spend], now: float) -> Refusal | None:
        return take(self.tat, wanted, now)

    async def prune(self, now: float) -> int:
        rested = [key for key, tat in self.tat.items() if tat <= now]
        for key in rested:
            del self.tat[key]
        return len(rested)


class StoreBuckets:
    """The buckets every replica shares (PostgreSQL)."""

    shared = True

    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, wanted: Sequence[Spend], now: float) -> Refusal | None:
        rows = [(s.key, s.interval, s.period + SLACK) for s in wanted]
        taken, found = await store.spend(self.db, rows, now)
        if len(taken) == len(wanted):
            return None
        refusals = [
            Refusal(s, retry_after(next_tat(found.get(s.key), now, s.interval), now, s.period))
            for s in wanted
            if s.key not in taken
        ]
        return max(refusals, key=lambda r: r.retry_after)

    async def prune(self, now: float) -> int:
        return await store.prune(self.db, now)


def buckets_for(db: Database) -> Buckets:
    return MemoryBuckets() if db.is_sqlite else StoreBuckets(db)
