"""``prompts/list``, ``resources/list`` and ``resources/templates/list`` through the gateway (R-16.1).

The items of the caller's active, reachable connections, in connection-name order, each named
with its account (prompts ``{account}__{prompt}``, URIs in the gateway namespace, the original in
``_meta``), withheld items left out. A page holds up to :data:`PAGE_SIZE` items; its cursor is
opaque and says which connection the next page starts in and where, so paging across connections
needs no state on the server (any replica answers the next page). A connection whose server
cannot list now is left out of this listing, as an inactive one is (a dead upstream never fails
the whole list), and so is an OAuth connection with no grant for the caller: listing never starts
an authorization (reading one does, as calling a tool does).
"""

from __future__ import annotations

import logging
from typing import Any

from toolcrib.errors import InBandError, InvalidArguments
from toolcrib.gateway.connections.manage import spec_of
from toolcrib.gateway.connections.shown import secrets_of
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources import access
from toolcrib.gateway.resources.naming import (
    ACCOUNT_META,
    ORIGINAL_TEMPLATE,
    ORIGINAL_URI,
    Cursor,
    gateway_uri,
)
from toolcrib.gateway.resources.offerings import Kind, listed
from toolcrib.gateway.resources.pinning import held_prompts
from toolcrib.policy.gates import Principal
from toolcrib.store.connections import ConnectionRow

__all__ = ["PAGE_SIZE", "list_offered", "offered_by"]

PAGE_SIZE = 100
logger = logging.getLogger(__name__)


async def list_offered(
    gw: Gateway, principal: Principal, kind: Kind, cursor: str | None = None, *, account: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``kind`` for ``principal`` (of ``account``'s alone, when given), and the cursor
    of the next page (None: the last).

    Without ``tool:execute`` or ``mcp:read`` the listing is empty (as ``tools/list`` is without
    ``tool:execute``, R-7.2). A cursor that this gateway did not hand out is ``invalid_arguments``.
    """
    start = Cursor(kind, "", 0)
    if cursor is not None:
        found = Cursor.decode(kind, cursor)
        if found is None:
            raise InvalidArguments("the cursor is not one this listing handed out")
        start = found
    if not access.may_read(principal):
        return [], None
    rules = (await gw.policy.current()).rules
    page: list[dict[str, Any]] = []
    for row in access.reachable_accounts(gw.catalog.connections, rules, principal):
        if row.name < start.account or account not in (None, row.name):
            continue
        offset = start.offset if row.name == start.account else 0
        items = await offered_by(gw, principal, row, kind)
        room = PAGE_SIZE - len(page)
        page.extend(items[offset : offset + room])
        if offset + room < len(items):
            return page, Cursor(kind, row.name, offset + room).encode()
    return page, None


async def offered_by(
    gw: Gateway, principal: Principal, row: ConnectionRow, kind: Kind
) -> list[dict[str, Any]]:
    """``row``'s items of ``kind`` that ``principal`` may see, named through the gateway."""
    spec = spec_of(gw, row, principal.member)
    if spec.oauth is not None and (await spec.oauth.vault.tokens())[0] is None:
        return []  # no grant at the upstream (yet): a listing never starts an authorization
    try:
        items = await listed(gw.upstreams.session(spec), kind, secrets_of(gw.policy, spec))
    except InBandError as exc:
        logger.info("%s: %s left out of the listing: %s", row.name, kind, exc.message)
        return []
    held = await held_prompts(gw.store.db, row, items, gw.store.clock()) if kind == "prompts" else set()
    rules = (await gw.policy.current()).rules
    shown = []
    for item in items:
        if kind == "prompts" and item.get("name") in held:
            continue  # changed since it was accepted
        key = "uriTemplate" if kind == "resources/templates" else "uri"
        name = access.item_name(item, str(item.get(key, "")))
        if not access.withholds(rules, principal, row, name):
            shown.append(_named(row.name, kind, item))
    return shown


def _named(account: str, kind: Kind, item: dict[str, Any]) -> dict[str, Any]:
    meta = dict(item.get("_meta") or {})
    meta[ACCOUNT_META] = account
    out = dict(item)
    if kind == "prompts":
        out["name"] = f"{account}__{item['name']}"
    elif kind == "resources":
        meta[ORIGINAL_URI] = item["uri"]
        out["uri"] = gateway_uri(account, str(item["uri"]))
    else:
        meta[ORIGINAL_TEMPLATE] = item["uriTemplate"]
        out["uriTemplate"] = gateway_uri(account, str(item["uriTemplate"]))
    out["_meta"] = meta
    return out
