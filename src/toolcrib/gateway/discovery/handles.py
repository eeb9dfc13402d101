"""Action handles: fresh per card, bound to the member, 10 minutes, pinned to the schema hash (R-5.10).

Every handle is stored, so every replica resolves it. A stored handle never changes: it is only
ever inserted, and deleted by housekeeping once expired. This process therefore keeps the handles
it issued or resolved in memory and answers from there without a database read: the memory copy is
the row itself, and expiry is decided from its ``created_at`` on every call, exactly as from the
store. A handle another replica issued is read from the store once, then held (#12).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

from toolcrib.auth.tokens import new_handle
from toolcrib.errors import HandleExpired, NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal
from toolcrib.store import handles as store
from toolcrib.store.handles import HandleRow
from toolcrib.store.learning import SearchRow

__all__ = ["issue_handles", "resolve_handle"]

HELD_HANDLES = 20_000
"""How many handles one process holds in memory; the oldest go first (they are read again if used)."""

_held: weakref.WeakKeyDictionary[Gateway, OrderedDict[str, HandleRow]] = weakref.WeakKeyDictionary()


def _memory(gw: Gateway) -> OrderedDict[str, HandleRow]:
    held = _held.get(gw)
    if held is None:
        held = _held[gw] = OrderedDict()
    return held


def _hold(gw: Gateway, rows: list[HandleRow]) -> None:
    held = _memory(gw)
    for row in rows:
        held[row.id] = row
    while len(held) > HELD_HANDLES:
        held.popitem(last=False)


async def issue_handles(
    gw: Gateway, principal: Principal, tools: list[tuple[str, str]], search: SearchRow | None = None
) -> list[str]:
    """One new handle per ``(public_name, schema_hash)`` for ``principal``'s member, stored where
    every replica can read it; ``search``, the search that issued them (R-5.12), stored with them."""
    now = gw.clock()
    sid = search.id if search is not None else None
    rows = [HandleRow(new_handle(), principal.member, name, schema, now, sid) for name, schema in tools]
    await store.insert_handles(gw.db, rows, search if rows else None)
    _hold(gw, rows)
    return [r.id for r in rows]


async def resolve_handle(gw: Gateway, principal: Principal, handle_id: str) -> HandleRow:
    """Step 1 for a handle: unknown or another member's is ``not_found``; too old is ``handle_expired``."""
    row = _memory(gw).get(handle_id)
    if row is None and handle_id.startswith("act_"):
        row = await store.get_handle(gw.db, handle_id)
        if row is not None:
            _hold(gw, [row])
    if row is None or row.member != principal.member:
        raise NotFound("unknown action handle; search again")
    if gw.clock() - row.created_at > gw.settings.handle_ttl_seconds:
        raise HandleExpired("this action handle has expired; search again")
    return row
