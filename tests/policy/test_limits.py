"""The arithmetic and the matching of rate limits (R-7.10, #21), property-tested: the GCRA lets a
burst of N pass and then one call per interval, tells exactly when a refused call would pass, and a
refused call consumes nothing; rules match by member or role, account and tool."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcrib.errors import ConfigError
from toolcrib.policy.rate_limits import DAY, MINUTE, SLACK, LimitRule, Spend, spends, take, validate_limit

START = 1_760_000_000.0  # times near today's: the float steps of a real clock
EPS = 1e-9

limits = st.integers(1, 200)
periods = st.sampled_from([MINUTE, DAY])
gaps = st.lists(
    st.one_of(st.just(0.0), st.floats(0, 5, allow_nan=False), st.floats(0, 2_000, allow_nan=False)),
    min_size=1,
    max_size=150,
)


def _bucket(n: int, period: float) -> Spend:
    return Spend("r:m:mia", period / n, period, LimitRule("r", per_minute=n))


def _run(n: int, period: float, gaps: list[float]) -> list[tuple[float, bool, float]]:
    """Attempts at START + cumulative ``gaps``: (time, passed, retry_after when refused)."""
    bucket, state, now, out = _bucket(n, period), {}, START, []
    for gap in gaps:
        now += gap
        refusal = take(state, [bucket], now)
        out.append((now, refusal is None, 0.0 if refusal is None else refusal.retry_after))
    return out


@settings(max_examples=400, deadline=None)
@given(limits, periods, gaps)
def test_r7_10_gcra_never_lets_more_than_the_burst_plus_the_rate_through(
    n: int, period: float, gaps: list[float]
) -> None:
    """Over any window from one passed call to a later one, of length t, at most N + t / I calls
    pass (I = period / N): N within any window shorter than I, fewer than 2N within one period."""
    interval = period / n
    passed = [t for t, ok, _ in _run(n, period, gaps) if ok]
    for i, first in enumerate(passed):
        for j in range(i, len(passed)):
            span = passed[j] - first
            assert j - i + 1 <= n + (span + SLACK) / interval + EPS
            if span < interval - SLACK:
                assert j - i + 1 <= n
            if span < period - SLACK:
                assert j - i + 1 <= 2 * n - 1


@settings(max_examples=300, deadline=None)
@given(limits, periods)
def test_r7_10_a_rested_bucket_lets_exactly_n_pass_at_once(n: int, period: float) -> None:
    results = [ok for _, ok, _ in _run(n, period, [0.0] * (n + 3))]
    assert results == [True] * n + [False] * 3


@settings(max_examples=300, deadline=None)
@given(limits, periods, gaps)
def test_r7_10_retry_after_is_exact(n: int, period: float, gaps: list[float]) -> None:
    """A refused call passes ``retry_after`` seconds later, and not noticeably sooner."""
    bucket, state, now = _bucket(n, period), {}, START
    for gap in gaps:
        now += gap
        refusal = take(state, [bucket], now)
        if refusal is None:
            continue
        wait = refusal.retry_after
        assert wait > 0
        if wait > 3 * SLACK:
            assert take(dict(state), [bucket], now + wait - 3 * SLACK) is not None
        assert take(dict(state), [bucket], now + wait) is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(limits, periods), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 3), st.floats(0, 100, allow_nan=False)), max_size=60),
)
def test_r7_10_a_refused_call_consumes_nothing(
    buckets: list[tuple[int, float]], attempts: list[tuple[int, float]]
) -> None:
    """Calls spend from several buckets at once (a minute and a day, several rules): when any one
    refuses, none moves; when all have room, each moves by its own interval."""
    wanted = [
        Spend(f"r{i}:m:mia", p / n, p, LimitRule(f"r{i}", per_minute=n)) for i, (n, p) in enumerate(buckets)
    ]
    state: dict[str, float] = {}
    now = START
    for count, gap in attempts:
        now += gap
        chosen = wanted[: count % len(wanted) + 1]
        before = dict(state)
        refusal = take(state, chosen, now)
        if refusal is not None:
            assert state == before
            assert refusal.spend in chosen
        else:
            for s in chosen:
                assert state[s.key] == pytest.approx(max(before.get(s.key, now), now) + s.interval)


def test_r7_10_rules_match_by_member_or_role_account_and_tool() -> None:
    every = LimitRule("all", per_minute=1)
    role = LimitRule("role", role="member", per_minute=1)
    mia = LimitRule("mia", member="mia", per_day=5)
    desk = LimitRule("desk", account="desk", per_minute=1, per_day=2)
    echo = LimitRule("echo", account="desk", tool="echo", per_minute=1)
    rules = [every, role, mia, desk, echo]

    def keys(member: str, role_: str, account: str | None, tool: str | None) -> list[str]:
        return [s.key for s in spends(rules, member=member, role=role_, account=account, tool=tool)]

    assert keys("mia", "member", "desk", "echo") == [
        "all:m:mia", "role:m:mia", "mia:d:mia", "desk:m:mia", "desk:d:mia", "echo:m:mia",
    ]  # fmt: skip
    assert keys("ada", "admin", "desk", "add") == ["all:m:ada", "desk:m:ada", "desk:d:ada"]
    assert keys("ada", "admin", "crm", "add") == ["all:m:ada"]
    # a control-plane write: the rules that name no account
    assert keys("mia", "member", None, None) == ["all:m:mia", "role:m:mia", "mia:d:mia"]
    assert [s.interval for s in spends([desk], member="x", role="guest", account="desk", tool="t")] == [
        60.0,
        43_200.0,
    ]


@pytest.mark.parametrize(
    "rule",
    [
        LimitRule("x", member="mia", role="member", per_minute=1),
        LimitRule("x", tool="echo", per_minute=1),
        LimitRule("x", role="king", per_minute=1),
        LimitRule("x", account="Desk!", per_minute=1),
        LimitRule("x"),
        LimitRule("x", per_minute=0),
        LimitRule("x", per_day=-5),
        LimitRule("x", per_minute=10**10),
        LimitRule("x", per_minute=True),
        LimitRule("x", per_minute=2.5),  # type: ignore[arg-type]
        LimitRule("x", per_minute="5"),  # type: ignore[arg-type]
        LimitRule("x", member="", per_minute=1),
        LimitRule("x", member="m" * 81, per_minute=1),
    ],
)
def test_r7_10_malformed_limits_are_refused(rule: LimitRule) -> None:
    with pytest.raises(ConfigError):
        validate_limit(rule)
