"""Rate limits (R-7.10): the check of each call, and the admin side of the rules.

``check_call`` runs in the execution pipeline just before the upstream call (after the final
outbound check), so a call over a limit reaches nothing upstream and writes no audit row;
``check_write`` runs for every control-plane operation classified write or destructive. Both read
the rules from the policy snapshot (cached, R-7.6): a call that no rule matches costs nothing, and
one that a rule matches costs one statement on PostgreSQL and none on SQLite (``store.rate_limits``).

Rules are set, listed and removed with ``restrictions:write`` / ``restrictions:read`` (a limit,
like a restriction, decides whether a call may run), through the same functions on every face.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from toolcrib.auth.tokens import new_rule_id
from toolcrib.errors import ConfigError, NotFound, RateLimited
from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.policy.rate_limits import MAX_RULES, MINUTE, LimitRule, Refusal, spends, validate_limit
from toolcrib.store import members as member_store
from toolcrib.store import rate_limits as store

if TYPE_CHECKING:  # a command that lists limits reads them without a gateway (#33)
    from toolcrib.gateway.core import Gateway

__all__ = ["check_call", "check_write", "describe", "limit_view", "list_limits", "remove_limit", "set_limit"]


async def check_call(gw: Gateway, principal: Principal, *, account: str, tool: str) -> None:
    """Spend one call of ``account``'s ``tool`` from the caller's buckets, or raise ``rate_limited``."""
    await _check(gw, principal, account, tool)


async def check_write(gw: Gateway, principal: Principal) -> None:
    """Spend one control-plane write from the caller's buckets of the rules naming no account."""
    await _check(gw, principal, None, None)


async def _check(gw: Gateway, principal: Principal, account: str | None, tool: str | None) -> None:
    rules = (await gw.policy.current()).limit_rules
    if not rules:
        return
    wanted = spends(rules, member=principal.member, role=principal.role, account=account, tool=tool)
    if not wanted:
        return
    refusal = await gw.buckets.take(wanted, gw.store.clock())
    if refusal is not None:
        raise RateLimited(_message(refusal), refusal.retry_after)


def _message(refusal: Refusal) -> str:
    per = "minute" if refusal.spend.period == MINUTE else "day"
    return f"over the rate limit ({describe(refusal.spend.rule)}, per {per}); retry later"


def describe(rule: LimitRule) -> str:
    """A rule in words: ``5/min, 100/day for role member on desk__echo``."""
    counts = [f"{n}/{unit}" for n, unit in ((rule.per_minute, "min"), (rule.per_day, "day")) if n]
    who = f"member {rule.member}" if rule.member else f"role {rule.role}" if rule.role else "every member"
    where = f"{rule.account}__{rule.tool}" if rule.tool else rule.account or "every call and admin write"
    return f"{', '.join(counts)} for {who} on {where}"


def limit_view(rule: LimitRule) -> dict[str, Any]:
    return {**dataclasses.asdict(rule), "description": describe(rule)}


async def set_limit(
    gw: Gateway,
    principal: Principal,
    *,
    member: str | None = None,
    role: str | None = None,
    account: str | None = None,
    tool: str | None = None,
    per_minute: int | None = None,
    per_day: int | None = None,
) -> LimitRule:
    """Add a limit (replacing one with the same member, role, account and tool); it takes effect
    within the policy cache time (R-7.6) on every replica, here at once. Its account must exist;
    its tool need not be listed yet: the limit counts its calls from the sync that brings it
    (R-13.8)."""
    require_operation(principal, "restrictions:write", "set")
    rule = LimitRule(new_rule_id(), member, role, account, tool, per_minute, per_day)
    validate_limit(rule)
    if member is not None and await member_store.get_member(gw.store.db, member) is None:
        raise NotFound(f"no member named {member!r}")
    if account is not None and account not in gw.catalog.connections:
        raise NotFound(f"no connection named {account!r}")
    if await store.count_rules(gw.store.db) >= MAX_RULES:
        raise ConfigError(f"at most {MAX_RULES} limits; remove one first")
    await store.insert_rule(gw.store.db, dataclasses.asdict(rule))
    await gw.policy.reload()
    return rule


async def list_limits(policy_cache: PolicyCache, principal: Principal) -> list[LimitRule]:
    require_operation(principal, "restrictions:read", "list")
    await policy_cache.reload()
    return list((await policy_cache.current()).limit_rules)


async def remove_limit(gw: Gateway, principal: Principal, rule_id: str) -> None:
    require_operation(principal, "restrictions:write", "remove")
    if not await store.delete_rule(gw.store.db, rule_id):
        raise NotFound(f"no limit {rule_id!r}")
    await gw.policy.reload()
