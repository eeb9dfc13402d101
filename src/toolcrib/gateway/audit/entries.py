"""Audit entries for executions (R-11.1, R-11.2): opened before the upstream call, closed after it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection, Mapping
from typing import Any

from toolcrib.gateway.calls.shaping import MIN_SECRET_LENGTH
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.store import audit as store
from toolcrib.store.audit import AuditEntry, AuditFilter

__all__ = [
    "AuditFilter",
    "admin_row",
    "export_audit",
    "record_admin_act",
    "search_audit",
    "stream_audit",
    "target_id",
]

_TARGET_MAX = 200


def target_id(
    arguments: Mapping[str, Any], *, secret: Collection[str] = (), secrets: Collection[str] = ()
) -> str | None:
    """The value of the one argument naming the object: ``id``, ``*_id``, ``path``, ``uri``, ``url``,
    ``key``, ``name``, in that order of preference, cut to 200 characters. Nothing else is logged.

    Never a secret (R-9.2): an argument in ``secret`` (a parameter frozen as secret) is passed
    over, and so is any value holding one of ``secrets`` (the texts of the call's secret values),
    whatever its name; the next preference is taken instead."""
    keys = sorted(k for k in arguments if k not in secret)
    lowered = {k: k.lower() for k in keys}
    for preference in ("id", "*_id", "path", "uri", "url", "key", "name"):
        for key in keys:
            name = lowered[key]
            hit = name.endswith("_id") if preference == "*_id" else name == preference
            value = arguments[key]
            if hit and isinstance(value, str | int) and not isinstance(value, bool):
                text = str(value)
                if not _holds_secret(text, secrets):
                    return text[:_TARGET_MAX]
    return None


def _holds_secret(text: str, secrets: Collection[str]) -> bool:
    return any(s and (s == text or (len(s) >= MIN_SECRET_LENGTH and s in text)) for s in secrets)


async def open_entry(
    gw: Gateway,
    principal: Principal,
    *,
    account: str,
    connector: str,
    operation: str,
    risk: str,
    target: str | None,
    approved: bool = True,
    approved_by: str | None = None,
    kind: str = "call",
) -> AuditEntry:
    """Open the row of a call (R-11.1); ``approved_by`` names who answered its approval step.
    ``kind`` is ``call`` for a tool, ``prompt`` or ``resource`` for a ``prompts/get`` or a
    ``resources/read`` (R-16.2)."""
    entry = AuditEntry(
        member=principal.member,
        grant_id=principal.grant_id,
        account=account,
        connector=connector,
        operation=operation,
        classification=risk,
        approved=approved,
        approved_by=approved_by,
        target_id=target,
        started_at=gw.store.clock(),
        instance=gw.instance.id,
        kind=kind,
    )
    await store.open_entry(gw.store.db, entry)
    gw.audit_rows_written += 1
    return entry


async def record_admin_act(
    gw: Gateway,
    *,
    member: str,
    account: str,
    operation: str,
    outcome: str,
    error_code: str | None,
    target: str | None = None,
) -> AuditEntry:
    """An administrative act, or a refused one, as one closed row of ``kind='admin'``: nothing runs
    upstream after it, so there is no pending row to close."""
    now = gw.store.clock()
    row = gw.catalog.connections.get(account)
    entry = AuditEntry(
        member=member,
        grant_id="",
        account=account,
        connector=row.connector if row is not None else "",
        operation=operation,
        classification="admin",
        approved=False,
        target_id=target,
        started_at=now,
        finished_at=now,
        duration_ms=0.0,
        outcome=outcome,
        error_code=error_code,
        instance=gw.instance.id,
        kind="admin",
    )
    await store.open_entry(gw.store.db, entry)
    return entry


def admin_row(
    gw: Gateway,
    principal: Principal,
    *,
    account: str,
    operation: str,
    classification: str,
    target: str | None,
) -> dict[str, Any]:
    """An administrative act ``principal`` is making, as the closed ``kind='admin'`` audit row a
    store function writes in the act's own transaction (so the act and its row land together)."""
    now = gw.store.clock()
    row = gw.catalog.connections.get(account)
    entry = AuditEntry(
        member=principal.member,
        grant_id=principal.grant_id,
        account=account,
        connector=row.connector if row is not None else "",
        operation=operation,
        classification=classification,
        approved=True,
        target_id=target[:200] if target is not None else None,
        started_at=now,
        outcome="ok",
        finished_at=now,
        duration_ms=0.0,
        instance=gw.instance.id,
        kind="admin",
    )
    return {k: v for k, v in entry.to_json().items() if k != "id"}


async def close_entry(storage: Storage, entry: AuditEntry, *, outcome: str, error_code: str | None) -> None:
    assert entry.id is not None
    await store.close_entry(
        storage.db,
        entry.id,
        outcome=outcome,
        error_code=error_code,
        started=entry.started_at,
        finished=storage.clock(),
    )


async def search_audit(storage: Storage, principal: Principal, f: AuditFilter) -> list[dict[str, Any]]:
    """Audit entries matching ``f``, newest first (R-11.3); needs ``audit:read``."""
    require_operation(principal, "audit:read", "search")
    return [e.to_json() for e in await store.search(storage.db, f)]


_EXPORT_PAGE = 500


async def stream_audit(storage: Storage, principal: Principal, f: AuditFilter) -> AsyncIterator[str]:
    """Every entry matching ``f`` as JSON lines, oldest first, read a page at a time (an archive
    before retention deletes them, R-11.4): memory stays one page however long the trail is.
    ``f.limit`` is ignored. Needs ``audit:read``."""
    require_operation(principal, "audit:read", "search")
    after = 0
    while page := await store.page(storage.db, f, after_id=after, size=_EXPORT_PAGE):
        yield "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in page)
        after = page[-1].id or after


async def export_audit(storage: Storage, principal: Principal, f: AuditFilter) -> str:
    """JSON lines, oldest first; needs ``audit:read``."""
    require_operation(principal, "audit:read", "search")
    rows = await store.search(storage.db, f)
    return "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in reversed(rows))
