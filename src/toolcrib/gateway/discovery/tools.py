"""The connected tools as the operator sees them: ``toolcrib tools list`` (#13).

Models never get this list (they search); the operator on the host does, one row per usable tool
with its connection's status and the risk class its card states.
"""

from __future__ import annotations

from typing import Any

from toolcrib.errors import NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal, require_operation

__all__ = ["list_tools"]


async def list_tools(
    gw: Gateway, principal: Principal, connection: str | None = None
) -> list[dict[str, Any]]:
    """Every usable tool (of one ``connection`` when named), by public name (``connections:read``)."""
    require_operation(principal, "connections:read", "list")
    if connection is not None and connection not in gw.catalog.connections:
        raise NotFound(f"no connection named {connection!r}")
    rows = []
    for account, tools in sorted(gw.catalog.tools.items()):
        row = gw.catalog.connections.get(account)
        if row is None or (connection is not None and account != connection):
            continue
        for name in sorted(tools):
            card = tools[name].card or {}
            rows.append(
                {
                    "name": tools[name].record.public_name,
                    "connection": account,
                    "status": row.status,
                    "risk": card.get("risk"),
                    "description": card.get("description"),
                }
            )
    return rows
