"""Reviewing changed tools and prompts (SPEC R-13.4): the held changes, accepting and rejecting them.

A prompt's change (``gateway.resources.pinning``) is reviewed here too: it shows with ``offering``
``prompt`` (a tool's with ``tool``) and its name as ``prompt:{name}`` (:data:`PROMPT_PREFIX`), the
name accepting and rejecting take. A tool's name never holds a ``:`` (R-4.2 refuses it), so a prompt
and a tool of the same name are never taken for one another, on any face, with no new argument.

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

__all__ = ["MAX_CHANGES", "PROMPT_PREFIX", "accept_change", "list_changes", "reject_change"]

MAX_CHANGES = 100
"""Changes one listing shows, oldest first; the next ones show as these are decided."""
_MAX_DIFF_CHARS = 64_000
_PERMISSION = "connections:write"
_MAX_NAME = 256  # the pins' name column
PROMPT_PREFIX = "prompt:"
"""How a held prompt is named where a held tool is (``tools accept crm prompt:summarize_ticket``)."""


async def list_changes(gw: Gateway, principal: Principal, account: str | None = None) -> list[dict[str, Any]]:
    """The held tools and prompts awaiting a decision (of ``account`` when named), each with a
    unified diff of its accepted and offered definitions (``kind`` ``new``: nothing was accepted
    yet; ``offering`` ``tool`` or ``prompt``)."""
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
    """Accept the definition ``tool`` (``prompt:{name}`` for a prompt) offers now (``sha256``: only
    if it is still that one)."""
    return await _decide(gw, principal, account, tool, "accept", sha256)


async def reject_change(gw: Gateway, principal: Principal, account: str, tool: str) -> dict[str, Any]:
    """Keep ``tool`` held; its change leaves the list until the server offers another definition."""
    return await _decide(gw, principal, account, tool, "reject", None)


async def _decide(
    gw: Gateway, principal: Principal, account: str, tool: str, verdict: store.Verdict, sha256: str | None
) -> dict[str, Any]:
    require_operation(principal, _PERMISSION, verdict)
    row = await _reachable(gw, principal, account)
    kind: store.PinKind = "prompt" if tool.startswith(PROMPT_PREFIX) else "tool"
    name = tool.removeprefix(PROMPT_PREFIX)
    public_name = await _held_name(gw, account, name, kind)
    operation = f"{gw.settings.control_prefix}__tools__{verdict}"
    audit_row = admin_row(
        gw, principal, account=row.name, operation=operation, classification="write", target=tool[:200]
    )
    pin = await store.decide(
        gw.store.db,
        account,
        name,
        verdict,
        expected=sha256,
        audit_row=audit_row,
        public_name=public_name,
        kind=kind,
    )
    if pin is None:
        raise _stale(account, tool, sha256)
    if kind == "tool":
        await reinstall(gw, account)  # in this process now; the others' followers reload it
    return {"account": account, "tool": tool, "decision": verdict, "sha256": pin.offered_sha256}


async def _held_name(gw: Gateway, account: str, name: str, kind: store.PinKind) -> str | None:
    """The public name of the held tool ``name`` (None for a prompt, whose pin is read: a prompt's
    held state lives in the store alone); ``not_found`` when nothing of ``kind`` is held by it."""
    if kind == "tool":
        stored = gw.catalog.tools.get(account, {}).get(name)
        if stored is not None and stored.held:  # checked in memory first: odd names never reach SQL
            return stored.record.public_name
    elif (
        len(name) <= _MAX_NAME
        and (pin := await store.load_pin(gw.store.db, account, kind, name))
        and pin.held
    ):
        return None
    raise NotFound(f"{account}__{name} has no change waiting; see `tools changes`")


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
    """One held tool or prompt as shown on every face (worker-thread work: diffing two large schemas)."""
    pin = change.pin
    shown = PROMPT_PREFIX + pin.tool if change.kind == "prompt" else pin.tool
    name = f"{change.account}__{shown}"
    lines = difflib.unified_diff(
        _pretty(pin.accepted), _pretty(pin.offered), f"{name} (accepted)", f"{name} (offered)"
    )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + "\n... (the difference goes on; both definitions are given in full)\n"
    return {
        "account": change.account,
        "tool": shown,
        "offering": change.kind,
        "kind": "new" if pin.accepted is None else "changed",
        "changed_at": pin.changed_at,
        "sha256": pin.offered_sha256,
        "diff": diff,
        "accepted": pin.accepted,
        "offered": pin.offered,
    }
