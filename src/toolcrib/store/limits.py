"""Rate-limit rules and their buckets (R-7.10).

Rules are policy: a change is announced (``notify.POLICY``) so every replica reloads them with the
rest of its policy snapshot, and no call reads them from the database.

Buckets (``policy.limits``: one GCRA arrival time per rule, period and member) live where the
gateway's processes can share them:

- PostgreSQL (replicas): the ``rate_buckets`` table. A call spends from all of its buckets in ONE
  statement (``INSERT ... ON CONFLICT DO UPDATE ... WHERE <the bucket has room> RETURNING``): each
  row's check and update are one atomic step, however many replicas call at once. When a bucket
  refuses, a second statement of the same transaction gives back what the call took from the
  others and reads the refusing bucket; that runs on the refusal path only.
- SQLite (one process): a dictionary in this process, no database round trip at all. Several
  ``serve --workers`` processes on one SQLite file therefore each count on their own.

Housekeeping forgets buckets whose arrival time has passed: a rested bucket and an absent one are
the same.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import delete, insert, select, text

from toolcrib.policy.limits import SLACK, LimitRule, Refusal, Spend, next_tat, retry_after, take
from toolcrib.store.database import Database
from toolcrib.store.notify import POLICY, announce
from toolcrib.store.tables import rate_buckets, rate_limits

__all__ = ["Buckets", "MemoryBuckets", "StoreBuckets", "buckets_for"]


async def insert_rule(db: Database, rule: LimitRule) -> None:
    """Add ``rule``, replacing any rule with the same member, role, account and tool."""
    same = delete(rate_limits)
    for column, value in (
        (rate_limits.c.member, rule.member),
        (rate_limits.c.role, rule.role),
        (rate_limits.c.account, rule.account),
        (rate_limits.c.tool, rule.tool),
    ):
        same = same.where(column.is_(None) if value is None else column == value)
    values = {k: getattr(rule, k) for k in LimitRule.__slots__}
    async with db.begin() as conn:
        await conn.execute(same)
        await conn.execute(insert(rate_limits).values(created_at=time.time(), **values))
        await announce(conn, POLICY)


async def list_rules(db: Database) -> list[LimitRule]:
    async with db.read() as conn:
        rows = (await conn.execute(select(rate_limits).order_by(rate_limits.c.created_at))).all()
    return [LimitRule(**{k: r._mapping[k] for k in LimitRule.__slots__}) for r in rows]


async def count_rules(db: Database) -> int:
    async with db.read() as conn:
        return len((await conn.execute(select(rate_limits.c.id))).all())


async def delete_rule(db: Database, rule_id: str) -> bool:
    async with db.begin() as conn:
        result = await conn.execute(delete(rate_limits).where(rate_limits.c.id == rule_id))
        await announce(conn, POLICY)
    return bool(result.rowcount)


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
    """The buckets every replica shares (PostgreSQL): one statement per call (module docstring)."""

    shared = True

    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, wanted: Sequence[Spend], now: float) -> Refusal | None:
        spend, params = _spend_statement(wanted, now)
        async with self.db.begin() as conn:
            taken = {row[0] for row in (await conn.execute(spend, params)).all()}
            if len(taken) == len(wanted):
                return None
            refund, params = _refund_statement(wanted, taken)
            found = {row[0]: float(row[1]) for row in (await conn.execute(refund, params)).all()}
        return _refusal(wanted, taken, found, now)

    async def prune(self, now: float) -> int:
        async with self.db.begin() as conn:
            result = await conn.execute(delete(rate_buckets).where(rate_buckets.c.tat <= now))
        return int(result.rowcount or 0)


def buckets_for(db: Database) -> Buckets:
    return MemoryBuckets() if db.is_sqlite else StoreBuckets(db)


def _spend_statement(wanted: Sequence[Spend], now: float) -> tuple[Any, dict[str, Any]]:
    """Insert each bucket rested-plus-one-call, or move it when it has room; the keys that moved.

    ``EXCLUDED.tat - :now`` is the bucket's interval; its room (period plus the rounding slack)
    comes from the ``VALUES`` list, as ``policy.limits.passes`` states it."""
    rows = ", ".join(
        f"(CAST(:k{i} AS VARCHAR), CAST(:s{i} AS DOUBLE PRECISION), CAST(:r{i} AS DOUBLE PRECISION))"
        for i in range(len(wanted))
    )
    sql = (
        f"WITH v(key, step, room) AS (VALUES {rows}) "
        "INSERT INTO rate_buckets (key, tat) SELECT v.key, CAST(:now AS DOUBLE PRECISION) + v.step FROM v "
        "ON CONFLICT (key) DO UPDATE "
        "SET tat = GREATEST(rate_buckets.tat, :now) + (EXCLUDED.tat - :now) "
        "WHERE GREATEST(rate_buckets.tat, :now) + (EXCLUDED.tat - :now) - :now "
        "<= (SELECT v.room FROM v WHERE v.key = rate_buckets.key) "
        "RETURNING key"
    )
    params: dict[str, Any] = {"now": now}
    for i, spend in enumerate(wanted):
        params.update({f"k{i}": spend.key, f"s{i}": spend.interval, f"r{i}": spend.period + SLACK})
    return text(sql), params


def _refund_statement(wanted: Sequence[Spend], taken: set[str]) -> tuple[Any, dict[str, Any]]:
    """Give back what this call took from the buckets that moved; read the ones that refused."""
    params: dict[str, Any] = {}
    back = [s for s in wanted if s.key in taken]
    refused = [s for s in wanted if s.key not in taken]
    for i, spend in enumerate(wanted):
        params.update({f"k{i}": spend.key, f"s{i}": spend.interval})
    index = {s.key: i for i, s in enumerate(wanted)}
    keys = ", ".join(f":k{index[s.key]}" for s in refused)
    sql = f"SELECT key, tat FROM rate_buckets WHERE key IN ({keys})"
    if back:
        rows = ", ".join(
            f"(CAST(:k{index[s.key]} AS VARCHAR), CAST(:s{index[s.key]} AS DOUBLE PRECISION))" for s in back
        )
        sql = (
            f"WITH refund AS (UPDATE rate_buckets SET tat = rate_buckets.tat - v.step "
            f"FROM (VALUES {rows}) AS v(key, step) WHERE rate_buckets.key = v.key RETURNING 1) " + sql
        )
    return text(sql), params


def _refusal(wanted: Sequence[Spend], taken: set[str], found: dict[str, float], now: float) -> Refusal:
    """The refusing bucket that waits longest, as ``policy.limits.take`` chooses it."""
    refusals = [
        Refusal(s, retry_after(next_tat(found.get(s.key), now, s.interval), now, s.period))
        for s in wanted
        if s.key not in taken
    ]
    return max(refusals, key=lambda r: r.retry_after)
