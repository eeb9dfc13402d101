"""Reviewing changed tools (SPEC R-13.4): the held changes, accepting and rejecting them.

A sync holds a tool whose definition differs from the one accepted (``catalog.pins``); here an
admin (``connections:write``) reads the difference and decides. Accepting makes the offered
definition the accepted one: the tool is searchable and runs again. Rejecting keeps it held and
takes it off the list until the server offers yet another definition. Each decision is one
``admin`` audit row, written in the transaction that records it; the catalog is installed again
in this process at once, and other processes' followers reload it (``follower``).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import anyio

from toolcrib.errors import InvalidArguments, NotFound
from toolcrib.gateway.audit.entries import admin_row
from toolcrib.gateway.connections.catalogs import reinstall
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import reach
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.store import pins as store
from toolcrib.store.connections import ConnectionRow

__all__ = ["MAX_CHANGES", "accept_change", "list_changes", "reject_change"]

MAX_CHANGES = 100
"""Changes one listing shows, oldest first; the next ones show as these are decided."""
_MAX_DIFF_CHARS = 64_000
_PERMISSION = "connections:write"


async def list_changes(gw: Gateway, principal: Principal, account: str | None = None) -> list[dict[str, Any]]:
    """The held tools awaiting a decision (of ``account`` when named), each with a unified diff of
    its accepted and offered definitions (``kind`` ``new``: nothing was accepted yet)."""
    require_operation(principal, _PERMISSION, "changes")
    if account is not None:
        await _reachable(gw, principal, account)
    changes = await store.waiting_changes(gw.store.db, account, MAX_CHANGES)
    rules = (await gw.policy.current()).rules
    shown = [
        c for c in changes if reach.lists_connection(rules, principal, gw.catalog.connections.get(c.account))
    ]
    return await anyio.to_thread.run_sync(lambda: [_view(c) for c in shown])  # diffs cost CPU


async def accept_change(
    gw: Gateway, principal: Principal, account: str, tool: str, sha256: str | None = None
) -> dict[str, Any]:
    """Accept the definition ``tool`` offers now (``sha256``: only if it is still that one)."""
    return await _decide(gw, principal, account, tool, "accept", sha256)


async def reject_change(gw: Gateway, principal: Principal, account: str, tool: str) -> dict[str, Any]:
    """Keep ``tool`` held; its change leaves the list until the server offers another definition."""
    return await _decide(gw, principal, account, tool, "reject", None)


async def _decide(
    gw: Gateway, principal: Principal, account: str, tool: str, verdict: store.Verdict, sha256: str | None
) -> dict[str, Any]:
    require_operation(principal, _PERMISSION, verdict)
    row = await _reachable(gw, principal, account)
    stored = gw.catalog.tools.get(account, {}).get(tool)
    if stored is None or not stored.held:  # checked in memory first: odd names never reach SQL
        raise NotFound(f"{account}__{tool} has no change waiting; see `tools changes`")
    operation = f"{gw.settings.control_prefix}__tools__{verdict}"
    audit_row = admin_row(
        gw, principal, account=row.name, operation=operation, classification="write", target=tool
    )
    pin = await store.decide(
        gw.store.db,
        account,
        tool,
        verdict,
        expected=sha256,
        audit_row=audit_row,
        public_name=stored.record.public_name,
    )
    if pin is None:
        raise _stale(account, tool, sha256)
    await reinstall(gw, account)  # in this process now; the others' followers reload it
    return {"account": account, "tool": tool, "decision": verdict, "sha256": pin.offered_sha256}


def _stale(account: str, tool: str, sha256: str | None) -> Exception:
    if sha256 is None:
        return NotFound(f"{account}__{tool} has no change waiting; see `tools changes`")
    return InvalidArguments(
        "the server offers another definition now: review the change again",
        [{"pointer": "/sha256", "message": "not the definition offered now"}],
    )


async def _reachable(gw: Gateway, principal: Principal, account: str) -> ConnectionRow:
    row = gw.catalog.connections.get(account)
    if row is None or not reach.lists_connection((await gw.policy.current()).rules, principal, row):
        raise NotFound(f"no connection named {account!r}")
    return row


def _pretty(defn: dict[str, Any] | None) -> list[str]:
    """Pretty JSON lines, every non-ASCII character escaped: the text is the server's, written to be
    read by a model, and a reviewer must see a look-alike letter, a zero-width space or a terminal
    control character for what it is."""
    if defn is None:
        return []
    return json.dumps(defn, indent=2, sort_keys=True, ensure_ascii=True).splitlines(keepends=True)


def _view(change: store.Change) -> dict[str, Any]:
    """One held tool as shown on every face (worker-thread work: diffing two large schemas)."""
    pin = change.pin
    name = f"{change.account}__{pin.tool}"
    lines = difflib.unified_diff(
        _pretty(pin.accepted), _pretty(pin.offered), f"{name} (accepted)", f"{name} (offered)"
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + "\n... (the difference goes on; both definitions are given in full)\n"
    return {
        "account": change.account,
        "tool": pin.tool,
        "kind": "new" if pin.accepted is None else "changed",
        "changed_at": pin.changed_at,
        "sha256": pin.offered_sha256,
        "diff": diff,
        "accepted": pin.accepted,
        "offered": pin.offered,
    }
