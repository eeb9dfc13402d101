"""Restrictions, frozen parameters and classification overrides: the admin side of policy (SPEC 7–9).

Policy may name a tool its connection has not listed yet (R-13.8: the server is down, pending
authorization, not started): a frozen value, a classification or a restriction naming it is
stored and shown ``waiting for the tool``, and applies from the first sync that brings the tool.
The connection itself must exist; a parameter that a listed tool does not declare is refused (a
typo stays visible), and one a tool appears without holds the tool (``execute``, fail closed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from toolcrib.auth.tokens import new_rule_id
from toolcrib.errors import ConfigError, NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.gateway.storage import Storage
from toolcrib.policy.frozen import ACTIVE, WAITING, frozen_status, frozen_view, is_secret, unmet_frozen
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.policy.restrictions import explain
from toolcrib.policy.rules import Rule, describe_rule, validate_rule
from toolcrib.policy.scopes import RISKS
from toolcrib.store import members as member_store
from toolcrib.store import policy as store
from toolcrib.store.connections import StoredTool

__all__ = [
    "add_restriction",
    "classify_tool",
    "explain_restriction",
    "frozen_state",
    "list_classifications",
    "list_frozen",
    "list_restrictions",
    "remove_restriction",
    "restriction_status",
    "rule_view",
    "set_frozen",
    "tool_status",
    "unclassify_tool",
    "unset_frozen",
]


def rule_view(rule: Rule, catalogs: Catalogs | None = None) -> dict[str, Any]:
    """A rule as every face shows it; with the ``catalogs`` (``gw.catalog.tools``), its ``status``:
    whether the tool it names is listed yet (R-13.8)."""
    view = {**dataclasses.asdict(rule), "description": describe_rule(rule)}
    return view if catalogs is None else {**view, "status": restriction_status(catalogs, rule)}


_GLOB = frozenset("*?[")
Catalogs = Mapping[str, Mapping[str, StoredTool]]
"""``gw.catalog.tools``: account -> tool name -> its stored tool."""


def restriction_status(catalogs: Catalogs, rule: Rule) -> str:
    """:data:`WAITING` for a rule naming one exact tool of an account that has not listed it."""
    if rule.account is None or rule.tool is None or _GLOB & set(rule.tool):
        return ACTIVE
    return tool_status(catalogs, rule.account, rule.tool)


def tool_status(catalogs: Catalogs, account: str, tool: str) -> str:
    """Whether ``account`` has listed ``tool`` in ``catalogs`` (``gw.catalog.tools``): :data:`ACTIVE`,
    or :data:`WAITING` for it."""
    return ACTIVE if tool in catalogs.get(account, {}) else WAITING


def frozen_state(catalogs: Catalogs, account: str, tool: str, param: str) -> str:
    """What a frozen value does now (:func:`toolcrib.policy.frozen.frozen_status`), by ``catalogs``
    (``gw.catalog.tools``)."""
    stored = catalogs.get(account, {}).get(tool)
    return frozen_status(None if stored is None else stored.record.input_schema, param)


async def add_restriction(
    storage: Storage,
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
    if target_kind == "user" and await member_store.get_member(storage.db, target) is None:
        raise ConfigError(f"no member named {target!r}")
    await store.insert_restriction(storage.db, dataclasses.asdict(rule))
    return rule


async def list_restrictions(policy_cache: PolicyCache, actor: Principal) -> list[Rule]:
    require_operation(actor, "restrictions:read", "list")
    await policy_cache.reload()
    return list((await policy_cache.current()).rules)


async def remove_restriction(storage: Storage, rule_id: str, actor: Principal) -> None:
    require_operation(actor, "restrictions:write", "delete")
    if not await store.delete_restriction(storage.db, rule_id):
        raise NotFound(f"no restriction {rule_id!r}")


async def explain_restriction(
    gw: Gateway, *, user: str | None, role: str | None, tool: str, actor: Principal
) -> list[str]:
    """Which rules decide whether ``user`` (or ``role``) reaches ``tool``, in words (R-8.6); the last
    line says that a prompt or resource of that name is decided alike (a rule's ``tool`` names
    prompts and resources too, R-16.2)."""
    require_operation(actor, "restrictions:read", "explain")
    await gw.policy.reload()
    account, _, name = tool.partition("__")
    row = gw.catalog.connections.get(account)
    if row is None:
        raise NotFound(f"no connection named {account!r}")
    if user is not None:
        member = await member_store.get_member(gw.store.db, user)
        if member is None:
            raise NotFound(f"no member named {user!r}")
        role = member.role
    if role is None:
        raise ConfigError("explain needs a user or a role")
    rules = (await gw.policy.current()).rules
    lines = explain(
        rules, role=role, member=user, account=account, connector=row.connector, tool=name or None
    )
    covers = f"a prompt or resource named {name} of" if name else "the prompts and resources of"
    return [*lines, f"the same rules decide {covers} {account} (R-16.2)"]


def _connection_of(gw: Gateway, account: str) -> None:
    """The connection must exist; its tool need not be listed yet (R-13.8)."""
    if account not in gw.catalog.connections:
        raise NotFound(f"no connection named {account!r}")


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
    never read back on any face.

    A tool the connection has not listed yet is not refused: the value is stored, waiting for the
    tool (:func:`frozen_state`), and merged over its calls from the sync that brings it (R-13.8)."""
    require_operation(principal, "connections:write", "set")
    _connection_of(gw, account)
    stored = gw.catalog.tools.get(account, {}).get(tool)
    if stored is not None and unmet_frozen(stored.record.input_schema, [param]):
        raise ConfigError(f"{account}__{tool} has no parameter {param!r}")
    hidden = is_secret(param, secret)
    sealed = gw.store.box.seal(value) if hidden else None
    await store.set_frozen(gw.store.db, account, tool, param, value=value, sealed=sealed)
    await gw.policy.reload()
    return hidden


async def unset_frozen(gw: Gateway, principal: Principal, account: str, tool: str, param: str) -> None:
    require_operation(principal, "connections:write", "unset")
    if not await store.unset_frozen(gw.store.db, account, tool, param):
        raise NotFound(f"{account}__{tool}.{param} is not frozen")
    await gw.policy.reload()


async def list_frozen(gw: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """Every frozen parameter, for who may change connections (``connections:write``: frozen values
    are a connection's configuration); a secret one says it is secret and set, never its value.
    Each says its ``status`` (:func:`frozen_state`): active, waiting for the tool, or held."""
    require_operation(principal, "connections:write", "list")
    return [
        {
            **frozen_view(row),
            "status": frozen_state(gw.catalog.tools, row["account"], row["tool"], row["param"]),
        }
        for row in await store.list_frozen(gw.store.db)
    ]


async def classify_tool(gw: Gateway, account: str, tool: str, risk: str, actor: Principal) -> None:
    """An admin override of a tool's classification; ``forbidden`` hides it everywhere (R-7.4).
    A tool not listed yet is classified from the sync that brings it (R-13.8, :func:`tool_status`)."""
    require_operation(actor, "connections:write", "update")
    if risk not in RISKS:
        raise ConfigError(f"classification must be one of {', '.join(RISKS)}")
    _connection_of(gw, account)
    await store.set_override(gw.store.db, account, tool, risk)
    await gw.policy.reload()


async def unclassify_tool(gw: Gateway, account: str, tool: str, actor: Principal) -> None:
    """Drop the admin override of a tool's classification: its own annotations and verb decide
    again (R-7.4)."""
    require_operation(actor, "connections:write", "update")
    if not await store.delete_override(gw.store.db, account, tool):
        raise NotFound(f"{account}__{tool} has no classification override")
    await gw.policy.reload()


async def list_classifications(policy_cache: PolicyCache, actor: Principal) -> dict[tuple[str, str], str]:
    """Every classification override: ``(account, tool) -> risk``."""
    require_operation(actor, "connections:write", "list")
    await policy_cache.reload()
    return dict((await policy_cache.current()).overrides)
