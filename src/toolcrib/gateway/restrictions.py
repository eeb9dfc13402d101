"""Restrictions, frozen parameters and classification overrides: the admin side of policy (SPEC 7–9)."""

from __future__ import annotations

import dataclasses
from typing import Any

from toolcrib.auth.tokens import new_rule_id
from toolcrib.errors import ConfigError, NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.policy.frozen import frozen_view, is_secret
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.policy.restrictions import explain
from toolcrib.policy.rules import Rule, describe_rule, validate_rule
from toolcrib.policy.scopes import RISKS
from toolcrib.store import members as member_store
from toolcrib.store import policy as store

__all__ = [
    "add_restriction",
    "classify_tool",
    "explain_restriction",
    "list_classifications",
    "list_frozen",
    "list_restrictions",
    "remove_restriction",
    "rule_view",
    "set_frozen",
    "unclassify_tool",
    "unset_frozen",
]


def rule_view(rule: Rule) -> dict[str, Any]:
    return {**dataclasses.asdict(rule), "description": describe_rule(rule)}


async def add_restriction(
    gw: Gateway,
    *,
    effect: str,
    target_kind: str,
    target: str,
    connector: str | None = None,
    account: str | None = None,
    tool: str | None = None,
    actor: Principal,
) -> Rule:
    """Add a rule; it takes effect within the policy cache time (R-7.6) on every replica."""
    require_operation(actor, "restrictions:write", "create")
    rule = Rule(new_rule_id(), effect, target_kind, target, connector, account, tool)  # type: ignore[arg-type]
    validate_rule(rule)
    if target_kind == "user" and await member_store.get_member(gw.db, target) is None:
        raise ConfigError(f"no member named {target!r}")
    await store.insert_restriction(gw.db, dataclasses.asdict(rule))
    return rule


async def list_restrictions(gw: Gateway, actor: Principal) -> list[Rule]:
    require_operation(actor, "restrictions:read", "list")
    await gw.reload_policy()
    return list((await gw.policy()).rules)


async def remove_restriction(gw: Gateway, rule_id: str, actor: Principal) -> None:
    require_operation(actor, "restrictions:write", "delete")
    if not await store.delete_restriction(gw.db, rule_id):
        raise NotFound(f"no restriction {rule_id!r}")


async def explain_restriction(
    gw: Gateway, *, user: str | None, role: str | None, tool: str, actor: Principal
) -> list[str]:
    """Which rules decide whether ``user`` (or ``role``) reaches ``tool``, in words (R-8.6)."""
    require_operation(actor, "restrictions:read", "explain")
    await gw.reload_policy()
    account, _, name = tool.partition("__")
    row = gw.connections.get(account)
    if row is None:
        raise NotFound(f"no connection named {account!r}")
    if user is not None:
        member = await member_store.get_member(gw.db, user)
        if member is None:
            raise NotFound(f"no member named {user!r}")
        role = member.role
    if role is None:
        raise ConfigError("explain needs a user or a role")
    rules = (await gw.policy()).rules
    return explain(rules, role=role, member=user, account=account, connector=row.connector, tool=name or None)


def _tool_of(gw: Gateway, account: str, tool: str) -> None:
    if account not in gw.connections:
        raise NotFound(f"no connection named {account!r}")
    if tool not in gw.catalogs.get(account, {}):
        raise NotFound(f"connection {account!r} has no tool {tool!r}")


async def set_frozen(
    gw: Gateway,
    principal: Principal,
    account: str,
    tool: str,
    param: str,
    value: Any,
    secret: bool | None = None,
) -> bool:
    """Freeze a provider parameter to a JSON value (R-9.1); whether it was kept secret.

    Secret (R-9.2) when ``secret`` says so, and by default when the parameter's name says
    credential (:func:`toolcrib.policy.frozen.says_credential`); ``secret=False`` keeps a value
    such as a ``sort_key`` readable. A secret value is sealed with the connection secrets' key and
    never read back on any face."""
    require_operation(principal, "connections:write", "set")
    _tool_of(gw, account, tool)
    properties = gw.catalogs[account][tool].record.input_schema.get("properties") or {}
    if param not in properties:
        raise ConfigError(f"{account}__{tool} has no parameter {param!r}")
    hidden = is_secret(param, secret)
    sealed = gw.box.seal(value) if hidden else None
    await store.set_frozen(gw.db, account, tool, param, value=value, sealed=sealed)
    await gw.reload_policy()
    return hidden


async def unset_frozen(gw: Gateway, principal: Principal, account: str, tool: str, param: str) -> None:
    require_operation(principal, "connections:write", "unset")
    if not await store.unset_frozen(gw.db, account, tool, param):
        raise NotFound(f"{account}__{tool}.{param} is not frozen")
    await gw.reload_policy()


async def list_frozen(gw: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """Every frozen parameter, for who may change connections (``connections:write``: frozen values
    are a connection's configuration); a secret one says it is secret and set, never its value."""
    require_operation(principal, "connections:write", "list")
    return [frozen_view(row) for row in await store.list_frozen(gw.db)]


async def classify_tool(gw: Gateway, account: str, tool: str, risk: str, actor: Principal) -> None:
    """An admin override of a tool's classification; ``forbidden`` hides it everywhere (R-7.4)."""
    require_operation(actor, "connections:write", "update")
    if risk not in RISKS:
        raise ConfigError(f"classification must be one of {', '.join(RISKS)}")
    _tool_of(gw, account, tool)
    await store.set_override(gw.db, account, tool, risk)
    await gw.reload_policy()


async def unclassify_tool(gw: Gateway, account: str, tool: str, actor: Principal) -> None:
    """Drop the admin override of a tool's classification: its own annotations and verb decide
    again (R-7.4)."""
    require_operation(actor, "connections:write", "update")
    if not await store.delete_override(gw.db, account, tool):
        raise NotFound(f"{account}__{tool} has no classification override")
    await gw.reload_policy()


async def list_classifications(gw: Gateway, actor: Principal) -> dict[tuple[str, str], str]:
    """Every classification override: ``(account, tool) -> risk``."""
    require_operation(actor, "connections:write", "list")
    await gw.reload_policy()
    return dict((await gw.policy()).overrides)
