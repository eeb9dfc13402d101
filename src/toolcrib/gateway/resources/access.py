"""Who may see and read which prompts and resources (R-16.2): the same gates as ``execute_tool``.

``tool:execute`` gates the endpoint (R-7.2), the grant must hold ``mcp:read``, the connection must
be ``active``, and THE restriction resolver decides each item by its account and its name (an
account rule covers all of the account's prompts and resources; a block's ``--tool`` pattern
matches a prompt's or a resource's name as it matches a tool's). A resource read by URI goes by
the names of the listed resource at that URI and of every template the URI fills, and is withheld
when any of them is; one that no listed resource or template names is decided by its original
URI in place of a name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolcrib.errors import InBandError
from toolcrib.gateway.governance import reach
from toolcrib.policy.gates import Principal, require_execute, require_scope_for
from toolcrib.policy.rules import Rule
from toolcrib.store.connections import ConnectionRow

__all__ = [
    "READ_SCOPE_RISK",
    "item_name",
    "may_read",
    "reachable_accounts",
    "reaches_account",
    "require_reader",
    "withholds",
]

READ_SCOPE_RISK = "read"
"""Reading a prompt or a resource is classified ``read``: it needs ``mcp:read`` (R-7.3)."""


def require_reader(principal: Principal) -> None:
    """``tool:execute`` (``permission_required``), then ``mcp:read`` (``scope_required``)."""
    require_execute(principal)
    require_scope_for(principal, READ_SCOPE_RISK)


def may_read(principal: Principal) -> bool:
    """Whether :func:`require_reader` lets ``principal`` through (a listing is empty otherwise)."""
    try:
        require_reader(principal)
    except InBandError:
        return False
    return True


def reachable_accounts(
    connections: Mapping[str, ConnectionRow], rules: Sequence[Rule], principal: Principal
) -> list[ConnectionRow]:
    """The active connections of which the resolver lets ``principal`` reach something, by name."""
    return [
        row
        for _, row in sorted(connections.items())
        if row.status == "active" and reaches_account(rules, principal, row)
    ]


def reaches_account(rules: Sequence[Rule], principal: Principal, row: ConnectionRow) -> bool:
    """Whether the resolver lets ``principal`` reach anything of ``row`` (whatever its status)."""
    return reach.decide(
        rules, principal, account=row.name, connector=row.connector, where="offerings"
    ).allowed


def withholds(rules: Sequence[Rule], principal: Principal, row: ConnectionRow, name: str) -> bool:
    """Whether the resolver withholds the prompt or resource ``name`` of ``row`` from ``principal``."""
    decision = reach.decide(
        rules, principal, account=row.name, connector=row.connector, tool=name, where="offerings"
    )
    return not decision.allowed


def item_name(item: Mapping[str, Any], fallback: str) -> str:
    """The name an item is decided by: its ``name``, else ``fallback`` (its URI)."""
    name = item.get("name")
    return name if isinstance(name, str) and name else fallback
