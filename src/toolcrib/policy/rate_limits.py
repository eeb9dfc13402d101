"""Rate limits (R-7.10): which rules a call spends from, and the arithmetic of one bucket. Pure.

A rule narrows to a member or a role (neither: every member), optionally to an account and a tool
of it, and allows ``per_minute`` and/or ``per_day`` calls. Each member has a bucket of their own per
rule and period, so one runaway agent cannot spend another member's budget. A rule that names
neither an account nor a tool also counts the member's control-plane writes.

One bucket is one float, its theoretical arrival time ``tat`` (GCRA, the generic cell rate
algorithm): a limit of N per period T has an emission interval ``I = T / N``; a call at ``now``
passes when ``max(tat, now) + I - now <= T`` and then moves ``tat`` there; a refused call changes
nothing and may pass ``retry_after = max(tat, now) + I - now - T`` seconds later. So N calls pass at
once from a rested bucket, and after that one more every ``I``: over any window of length ``t``
fewer than ``N + t / I`` calls pass (N within any window shorter than ``I``; N per period in the
long run). It is a rate with a burst of N, not a count per calendar window: a member who spends a
full burst and then keeps calling at the rate gets up to 2N - 1 calls within one period.

The store keeps the buckets (``store.rate_limits``: shared over PostgreSQL, in process on SQLite); the
same expressions run there in SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass

from toolcrib.errors import ConfigError
from toolcrib.policy.roles import ROLES

__all__ = [
    "DAY",
    "MAX_PER_PERIOD",
    "MAX_RULES",
    "MINUTE",
    "SLACK",
    "LimitRule",
    "Refusal",
    "Spend",
    "next_tat",
    "passes",
    "retry_after",
    "spends",
    "take",
    "validate_limit",
]

MINUTE = 60.0
DAY = 86_400.0
MAX_PER_PERIOD = 1_000_000_000
"""The largest limit a rule may set per period (fits the store's 32-bit integer column)."""
MAX_RULES = 500
"""At most this many rules: each call is matched against all of them, in memory."""
SLACK = 1e-3
"""Seconds of tolerance for float rounding: ``tat`` near 1.7e9 s moves in steps of ~2.4e-7 s."""

_ACCOUNT = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_MEMBER_MAX = 80
_TOOL_MAX = 256


@dataclass(frozen=True, slots=True)
class LimitRule:
    id: str
    member: str | None = None
    role: str | None = None
    account: str | None = None
    tool: str | None = None
    per_minute: int | None = None
    per_day: int | None = None

    def matches(self, *, member: str, role: str, account: str | None, tool: str | None) -> bool:
        """Whether a call of ``account``/``tool`` by ``member`` counts here (both None: a
        control-plane write, counted by the rules that name neither)."""
        if self.member not in (None, member) or self.role not in (None, role):
            return False
        if account is None:
            return self.account is None and self.tool is None
        return self.account in (None, account) and self.tool in (None, tool)


@dataclass(frozen=True, slots=True)
class Spend:
    """One bucket a call spends from: its key, emission interval and period (seconds)."""

    key: str
    interval: float
    period: float
    rule: LimitRule


def spends(
    rules: Iterable[LimitRule], *, member: str, role: str, account: str | None, tool: str | None
) -> list[Spend]:
    """The buckets a call spends from, one per matching rule and period, all of ``member``'s own."""
    out: list[Spend] = []
    for rule in rules:
        if not rule.matches(member=member, role=role, account=account, tool=tool):
            continue
        for tag, per, period in (("m", rule.per_minute, MINUTE), ("d", rule.per_day, DAY)):
            if per:
                out.append(Spend(f"{rule.id}:{tag}:{member}", period / per, period, rule))
    return out


def next_tat(tat: float | None, now: float, interval: float) -> float:
    """The bucket's arrival time once a call at ``now`` is counted (an absent bucket is rested)."""
    return max(now if tat is None else tat, now) + interval


def passes(new_tat: float, now: float, period: float) -> bool:
    """Whether the call that would move the bucket to ``new_tat`` fits within the period."""
    return new_tat - now <= period + SLACK


def retry_after(new_tat: float, now: float, period: float) -> float:
    """Seconds from ``now`` until that call would pass (at most 0 when it passes now)."""
    return new_tat - now - period


def validate_limit(rule: LimitRule) -> None:
    """A rule's shape: the checks that need no database (the gateway checks the names exist)."""
    if rule.member is not None and rule.role is not None:
        raise ConfigError("a limit names a member or a role, not both")
    if rule.role is not None and rule.role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")
    if rule.member is not None and not 0 < len(rule.member) <= _MEMBER_MAX:
        raise ConfigError(f"member must be 1 to {_MEMBER_MAX} characters")
    if rule.tool is not None and rule.account is None:
        raise ConfigError("a limit on a tool names its account too")
    if rule.account is not None and not _ACCOUNT.match(rule.account):
        raise ConfigError("account must be a connection's name")
    if rule.tool is not None and not 0 < len(rule.tool) <= _TOOL_MAX:
        raise ConfigError(f"tool must be 1 to {_TOOL_MAX} characters")
    if rule.per_minute is None and rule.per_day is None:
        raise ConfigError("a limit sets per_minute, per_day or both")
    for name, value in (("per_minute", rule.per_minute), ("per_day", rule.per_day)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PER_PERIOD:
            raise ConfigError(f"{name} must be a whole number from 1 to {MAX_PER_PERIOD}")


def take(buckets: MutableMapping[str, float], wanted: Sequence[Spend], now: float) -> Refusal | None:
    """Spend one call from every bucket of ``wanted`` in ``buckets`` (key -> tat), or from none.

    None when the call passes (every bucket moved); else the refusal of the bucket that waits
    longest, and ``buckets`` is left as it was: a refused call consumes nothing.
    """
    moved: dict[str, float] = {}
    refusal: Refusal | None = None
    for spend in wanted:
        new = next_tat(moved.get(spend.key, buckets.get(spend.key)), now, spend.interval)
        if passes(new, now, spend.period):
            moved[spend.key] = new
        else:
            wait = retry_after(new, now, spend.period)
            if refusal is None or wait > refusal.retry_after:
                refusal = Refusal(spend, wait)
    if refusal is None:
        buckets.update(moved)
    return refusal


@dataclass(frozen=True, slots=True)
class Refusal:
    """The bucket that refused a call, and the seconds until the call would pass."""

    spend: Spend
    retry_after: float
