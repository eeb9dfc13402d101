"""Rate-limit buckets in the store (R-7.10, #21): shared by replicas on PostgreSQL, in process on
SQLite; atomic per bucket under concurrency, all-or-nothing per call."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import anyio
import pytest

from toolcrib.gateway.governance import buckets as store
from toolcrib.policy.rate_limits import LimitRule, Spend, spends
from toolcrib.store import rate_limits as rule_store
from toolcrib.store.database import Database

pytestmark = pytest.mark.anyio

NOW = 1_760_000_000.0


@pytest.fixture
async def replicas(store_url: str) -> AsyncIterator[tuple[Database, Database]]:
    """One database opened by two engines, as two replicas would."""
    a, b = Database(store_url, busy_seconds=30), Database(store_url, busy_seconds=30)
    await a.migrate()
    yield a, b
    await a.close()
    await b.close()


def _spend(rule: LimitRule, member: str = "mia") -> list[Spend]:
    return spends([rule], member=member, role="member", account="desk", tool="echo")


async def test_r7_10_sixty_concurrent_calls_over_two_replicas_pass_exactly_the_limit(
    replicas: tuple[Database, Database],
) -> None:
    rule = LimitRule("rul_ten", role="member", per_minute=10)
    wanted = _spend(rule)
    if replicas[0].is_sqlite:  # one process: both "replicas" share the process's buckets
        shared = store.buckets_for(replicas[0])
        buckets = [shared, shared]
    else:
        buckets = [store.buckets_for(db) for db in replicas]
        assert all(isinstance(b, store.StoreBuckets) for b in buckets)
    passed: list[bool] = []

    async def call(n: int) -> None:
        passed.append(await buckets[n % 2].take(wanted, NOW) is None)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for n in range(60):
                tg.start_soon(call, n)
    assert passed.count(True) == 10
    assert len(passed) == 60


async def test_r7_10_a_refused_call_takes_nothing_from_its_other_buckets(
    replicas: tuple[Database, Database],
) -> None:
    """A call spends from a roomy day bucket and a full minute bucket: refused, and the day
    bucket is given back, so the day's budget is spent only by calls that ran."""
    rule = LimitRule("rul_both", per_minute=2, per_day=5)
    wanted = _spend(rule)
    buckets = store.buckets_for(replicas[0])
    assert await buckets.take(wanted, NOW) is None
    assert await buckets.take(wanted, NOW) is None
    refused = await buckets.take(wanted, NOW)
    assert refused is not None
    assert refused.spend.key.endswith(":m:mia")
    assert refused.retry_after == pytest.approx(30.0, abs=0.01)
    # a minute later: 3 more calls fit in the day (5 - 2), not 2 (had the refused call taken one)
    later = NOW + 60
    results = [await buckets.take(wanted, later) is None for _ in range(3)]
    assert results == [True, True, False]  # the minute bucket refills 2 by then, the day has 3
    assert await buckets.take(wanted, later + 60) is None  # the day's fifth call
    day = await buckets.take(wanted, later + 120)
    assert day is not None
    assert day.spend.key.endswith(":d:mia")


async def test_r7_10_each_member_spends_their_own_bucket(replicas: tuple[Database, Database]) -> None:
    rule = LimitRule("rul_one", role="member", per_minute=1)
    buckets = store.buckets_for(replicas[0])
    assert await buckets.take(_spend(rule, "mia"), NOW) is None
    assert await buckets.take(_spend(rule, "mia"), NOW) is not None
    assert await buckets.take(_spend(rule, "max"), NOW) is None


async def test_r7_10_housekeeping_forgets_rested_buckets_only(replicas: tuple[Database, Database]) -> None:
    buckets = store.buckets_for(replicas[0])
    assert await buckets.take(_spend(LimitRule("rul_m", per_minute=1)), NOW) is None
    assert await buckets.take(_spend(LimitRule("rul_d", per_day=1)), NOW) is None
    assert await buckets.prune(NOW + 61) == 1  # the minute bucket rested; the day bucket did not
    assert await buckets.take(_spend(LimitRule("rul_d", per_day=1)), NOW + 61) is not None


async def test_r7_10_rules_are_replaced_by_target_and_removed(replicas: tuple[Database, Database]) -> None:
    db = replicas[0]
    for rule in (
        LimitRule("rul_a", role="member", per_minute=3),
        LimitRule("rul_b", role="member", per_minute=5),
        LimitRule("rul_c", account="desk", tool="echo", per_day=9),
    ):
        await rule_store.insert_rule(db, dataclasses.asdict(rule))
    rules = await rule_store.list_rules(replicas[1])
    assert [(r["id"], r["per_minute"], r["per_day"]) for r in rules] == [
        ("rul_b", 5, None),
        ("rul_c", None, 9),
    ]
    assert await rule_store.delete_rule(db, "rul_b")
    assert not await rule_store.delete_rule(db, "rul_b")
    assert [r["id"] for r in await rule_store.list_rules(db)] == ["rul_c"]
