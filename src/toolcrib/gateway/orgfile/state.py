"""The organization as the gateway has it now, read through the same gateway functions as every
face (and so under the same permission checks), for ``plan`` to compare and ``export`` to write.

Secrets are opened here, inside the gateway (a connection's env and headers, secret frozen
values), so a plan can tell an unchanged secret from a changed one; nothing in this module prints
or returns them to a face.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.connections.url_secrets import connect_url
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import approvals, restrictions
from toolcrib.gateway.governance import rate_limits as limits
from toolcrib.gateway.identity import members
from toolcrib.policy.approvals import ApprovalRule
from toolcrib.policy.gates import Principal
from toolcrib.policy.rate_limits import LimitRule
from toolcrib.policy.rules import Rule
from toolcrib.store import catalog_allow
from toolcrib.store import members as member_store
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.members import MemberRow

__all__ = ["Current", "LiveConnection", "approval_key", "limit_key", "read_current", "rule_key"]


@dataclass(frozen=True, slots=True)
class LiveConnection:
    row: ConnectionRow
    env: dict[str, str]
    headers: dict[str, str]
    oauth: dict[str, Any] | None
    """The sealed OAuth client settings (``client_id``, ``client_secret``, ``scope``), when OAuth."""
    url: str | None = None
    """The whole URL, its secrets opened (R-13.7; ``row.url`` shows them as ``***``)."""
    registry_inputs: dict[str, str] = field(default_factory=dict)
    """The inputs it was added from a registry with (sealed, R-13.9)."""

    @property
    def from_registry(self) -> str | None:
        """``SERVER@VERSION`` of the registry entry it was added from."""
        name, version = self.row.registry_name, self.row.registry_version
        return f"{name}@{version}" if name else None


@dataclass(slots=True)
class Current:
    connections: dict[str, LiveConnection] = field(default_factory=dict)
    members: dict[str, MemberRow] = field(default_factory=dict)
    restrictions: list[Rule] = field(default_factory=list)
    frozen: dict[tuple[str, str, str], tuple[Any, bool]] = field(default_factory=dict)
    """``(account, tool, parameter) -> (value, secret)``."""
    approvals: list[ApprovalRule] = field(default_factory=list)
    limits: list[LimitRule] = field(default_factory=list)
    classifications: dict[tuple[str, str], str] = field(default_factory=dict)
    removed_members: frozenset[str] = frozenset()
    """Names of removed members: a removed member's name is not given to a new member."""
    catalog_allow: list[str] = field(default_factory=list)
    """The file's allow list of registry entries (R-13.9), as applied."""
    tools: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    """``(account, tool) -> input schema`` of every tool listed now: policy naming any other tool
    waits for it (R-13.8)."""


def rule_key(
    effect: str, kind: str, target: str, connector: str | None, account: str | None, tool: str | None
) -> tuple[str | None, ...]:
    return (effect, kind, target, connector, account, tool)


def approval_key(risk: str, account: str | None, role: str | None) -> tuple[str | None, ...]:
    return (risk, account, role)


def limit_key(
    member: str | None, role: str | None, account: str | None, tool: str | None
) -> tuple[str | None, ...]:
    return (member, role, account, tool)


async def read_current(gw: Gateway, actor: Principal) -> Current:
    """Everything an organization file describes, as stored now."""
    now = Current()
    for row in await connections.list_connections(gw, actor):
        secrets: dict[str, Any] = gw.store.box.open(row.secrets) or {}
        now.connections[row.name] = LiveConnection(
            row,
            dict(secrets.get("env") or {}),
            dict(secrets.get("headers") or {}),
            secrets.get("oauth"),
            connect_url(row.url, secrets),
            dict(secrets.get("registry_inputs") or {}),
        )
    now.members = {m.name: m for m in await members.list_members(gw.store, actor)}
    now.removed_members = frozenset(
        m.name for m in await member_store.list_members(gw.store.db) if m.status == "removed"
    )
    now.restrictions = await restrictions.list_restrictions(gw.policy, actor)
    listed = await restrictions.list_frozen(gw, actor)  # the permission check, and which are secret
    snapshot = (await gw.policy.current()).frozen_values
    for item in listed:
        value = snapshot.values.get((item["account"], item["tool"]), {}).get(item["param"])
        now.frozen[(item["account"], item["tool"], item["param"])] = (value, bool(item["secret"]))
    now.approvals = await approvals.list_approval_rules(gw.policy, actor)
    now.limits = await limits.list_limits(gw.policy, actor)
    now.classifications = await restrictions.list_classifications(gw.policy, actor)
    now.catalog_allow = await catalog_allow.read_allow(gw.store.db)
    now.tools = {
        (account, name): stored.record.input_schema
        for account, catalog in gw.catalog.tools.items()
        if account in now.connections
        for name, stored in catalog.items()
    }
    return now
