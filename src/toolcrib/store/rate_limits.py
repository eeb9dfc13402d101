"""Rate-limit rules and their buckets (R-7.10).

Rules are policy (``policy.rate_limits``): a change is announced (``notify.POLICY``) so every replica
reloads them with the rest of its policy snapshot, and no call reads them from the database.

Buckets (one GCRA arrival time per rule, period and member; ``gateway.governance.buckets`` holds them) live
where the gateway's processes can share them:

- PostgreSQL (replicas): the ``rate_buckets`` table, here. A call spends from all of its buckets in ONE
  statement (``INSERT ... ON CONFLICT DO UPDATE ... WHERE <the bucket has room> RETURNING``): each
  row's check and update are one atomic step, however many replicas call at once, and the
  statement commits by itself (no ``BEGIN``/``COMMIT``: one round trip). When a bucket refuses,
  a second statement gives back what the call took from the others and reads the refusing
  bucket; that runs on the refusal path only. Between the two, a concurrent call of the same
  member may find the given-back buckets still spent, and be refused a moment early.
- SQLite (one process): a dictionary in the process (``gateway.governance.buckets``), no database round
  trip at all. Several ``serve --workers`` processes on one SQLite file each count on their own.

Housekeeping forgets buckets whose arrival time has passed: a rested bucket and an absent one are
the same.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, select, text

from toolcrib.store.database import Database
from toolcrib.store.notify import POLICY, announce
from toolcrib.store.tables import rate_buckets, rate_limits

__all__: list[str] = []


async def insert_rule(db: Database, values: dict[str, Any]) -> None:
    """Add a rule, replacing any rule with the same member, role, account and tool."""
    same = delete(rate_limits)
    for name in ("member", "role", "account", "tool"):
        column, value = rate_limits.c[name], values.get(name)
        same = same.where(column.is_(None) if value is None else column == value)
    async with db.begin() as conn:
        await conn.execute(same)
        await conn.execute(insert(rate_limits).values(created_at=time.time(), **values))
        await announce(conn, POLICY)


async def list_rules(db: Database) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = (await conn.execute(select(rate_limits).order_by(rate_limits.c.created_at))).all()
    return [dict(r._mapping) for r in rows]


async def count_rules(db: Database) -> int:
    async with db.read() as conn:
        return len((await conn.execute(select(rate_limits.c.id))).all())


async def delete_rule(db: Database, rule_id: str) -> bool:
    async with db.begin() as conn:
        result = await conn.execute(delete(rate_limits).where(rate_limits.c.id == rule_id))
        await announce(conn, POLICY)
    return bool(result.rowcount)


async def spend(
    db: Database, wanted: Sequence[tuple[str, float, float]], now: float
) -> tuple[set[str], dict[str, float]]:
    """Spend one call from each bucket ``(key, interval, room)``, or from none.

    Returns the keys that moved; when not all did, a second statement gives back what they took
    and reads the arrival times of the buckets that refused (the second item). Each statement
    commits on its own: one round trip for a call that passes."""
    statement, params = _spend_statement(wanted, now)
    async with db.autocommit() as conn:
        taken = {row[0] for row in (await conn.execute(statement, params)).all()}
        if len(taken) == len(wanted):
            return taken, {}
        refund, params = _refund_statement(wanted, taken)
        found = {row[0]: float(row[1]) for row in (await conn.execute(refund, params)).all()}
    return taken, found


async def prune(db: Database, now: float) -> int:
    """Forget the buckets rested at ``now`` (an absent bucket is a rested one); how many went."""
    async with db.begin() as conn:
        result = await conn.execute(delete(rate_buckets).where(rate_buckets.c.tat <= now))
    return int(result.rowcount or 0)


def _spend_statement(wanted: Sequence[tuple[str, float, float]], now: float) -> tuple[Any, dict[str, Any]]:
    """Insert each bucket rested-plus-one-call, or move it when it has room; the keys that moved.

    ``EXCLUDED.tat - :now`` is the bucket's interval; its room (the period, plus the rounding
    slack of ``policy.rate_limits.passes``) comes from the ``VALUES`` list."""
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
    for i, (key, interval, room) in enumerate(wanted):
        params.update({f"k{i}": key, f"s{i}": interval, f"r{i}": room})
    return text(sql), params


def _refund_statement(
    wanted: Sequence[tuple[str, float, float]], taken: set[str]
) -> tuple[Any, dict[str, Any]]:
    """Give back what this call took from the buckets that moved; read the ones that refused."""
    params: dict[str, Any] = {}
    for i, (key, interval, _) in enumerate(wanted):
        params.update({f"k{i}": key, f"s{i}": interval})
    back = [i for i, w in enumerate(wanted) if w[0] in taken]
    keys = ", ".join(f":k{i}" for i, w in enumerate(wanted) if w[0] not in taken)
    sql = f"SELECT key, tat FROM rate_buckets WHERE key IN ({keys})"
    if back:
        rows = ", ".join(f"(CAST(:k{i} AS VARCHAR), CAST(:s{i} AS DOUBLE PRECISION))" for i in back)
        sql = (
            f"WITH refund AS (UPDATE rate_buckets SET tat = rate_buckets.tat - v.step "
            f"FROM (VALUES {rows}) AS v(key, step) WHERE rate_buckets.key = v.key RETURNING 1) " + sql
        )
    return text(sql), params
