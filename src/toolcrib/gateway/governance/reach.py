"""The one policy point every path calls to ask whether a member may reach a connector or tool (R-8.4).

Listing connections, connecting one, advertising in search, executing, the final outbound check,
opening a stored result, and listing or reading prompts and resources (R-16.2) all call
:func:`decide`; it asks THE restriction resolver (``policy.restrictions.resolve``) and nothing
else decides reachability. ``where`` names the path,
so a test can prove each path still asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from toolcrib.policy import restrictions
from toolcrib.policy.gates import Principal
from toolcrib.policy.restrictions import Decision
from toolcrib.policy.rules import Rule
from toolcrib.store.connections import ConnectionRow

__all__ = ["Path", "decide", "lists_connection"]

Path = Literal[
    "list_connections", "connect", "search", "execute", "outbound", "result", "diagnose", "offerings"
]
"""``offerings``: listing, getting and reading the prompts and resources of connections (R-16.2)."""


def decide(
    rules: Sequence[Rule],
    principal: Principal,
    *,
    account: str,
    connector: str,
    tool: str | None = None,
    where: Path,
) -> Decision:
    """Whether ``principal`` may reach ``tool`` of ``account`` (or the account, ``tool=None``)."""
    return restrictions.resolve(
        rules, role=principal.role, member=principal.member, account=account, connector=connector, tool=tool
    )


def lists_connection(rules: Sequence[Rule], principal: Principal, row: ConnectionRow | None) -> bool:
    """Whether ``row`` is among the connections ``principal`` may list: admins read and act only on
    those (R-8.4); a connection that does not exist (None) is not."""
    if row is None:
        return False
    return decide(
        rules, principal, account=row.name, connector=row.connector, where="list_connections"
    ).allowed
