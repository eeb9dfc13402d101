"""``tools__diagnose``: the fixed order of missing-tool checks (R-10.3)."""

from __future__ import annotations

from typing import Any

from toolcrib.gateway.connections.manage import shown_reason
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.search import visibility_of
from toolcrib.gateway.governance import reach
from toolcrib.policy.gates import Principal
from toolcrib.policy.scopes import TOOLS_SCOPE, scope_for

__all__ = ["diagnose"]

_REMINDER = "Connected tools are never in the tool list: find them with search_tools, then execute_tool."


async def diagnose(gw: Gateway, principal: Principal, name: str) -> dict[str, Any]:
    """Walk the checks in order and say where it stopped."""
    checks: list[str] = []
    account, _, tool = name.partition("__")
    policy = await gw.policy.current()
    row = gw.catalog.connections.get(account)
    reachable = (
        row is not None
        and reach.decide(
            policy.rules, principal, account=account, connector=row.connector, where="diagnose"
        ).allowed
    )

    def stop(at: str, advice: str) -> dict[str, Any]:
        return {"name": name, "stopped_at": at, "advice": advice, "checks": checks, "reminder": _REMINDER}

    if row is None or not reachable:
        return stop("connection_exists", f"No connection {account!r}: check the account label or connect it.")
    checks.append(f"connection {account} exists")
    if row.status != "active":
        return stop(
            "connection_active",
            f"Connection {account} is {row.status} ({shown_reason(gw, row)}): reconnect it.",
        )
    checks.append(f"connection {account} is active")
    if tool and tool not in gw.catalog.tools.get(account, {}):
        return stop("tool_in_catalog", f"{account} has no tool {tool!r}; refresh the connection.")
    if tool:
        if gw.catalog.tools[account][tool].held:
            return stop(
                "tool_changed",
                f"{name} changed at its server since it was accepted: it is held until an admin "
                "accepts the change (toolcrib tools changes).",
            )
        if policy.risk_of(gw.catalog.tools[account][tool]) == "forbidden":
            return stop("tool_in_catalog", f"{name} is forbidden by the organization: no grant reaches it.")
        where = visibility_of(gw, principal, policy, name)
        if where == "restricted":
            return stop("tool_in_catalog", f"{name} is in the catalog but a restriction covers it for you.")
        checks.append(f"{name} is in the catalog")
    if TOOLS_SCOPE not in principal.scopes:
        return stop("grant_scope", f"Your grant lacks {TOOLS_SCOPE}: ask for a token with it.")
    checks.append(f"the grant holds {TOOLS_SCOPE}")
    if tool:
        needed = scope_for(policy.risk_of(gw.catalog.tools[account][tool]))
        if needed not in principal.scopes:
            return stop(
                "grant_scope", f"Your grant lacks {needed}, which {name} needs: ask for a token with it."
            )
        checks.append(f"the grant holds {needed}")
    return stop("none", "Every check passed.")
