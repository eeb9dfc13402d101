"""Action handles: fresh per card, bound to the member, 10 minutes, pinned to the schema hash (R-5.10)."""

from __future__ import annotations

from toolcrib.auth.tokens import new_handle
from toolcrib.errors import HandleExpired, NotFound
from toolcrib.gateway.core import Gateway
from toolcrib.store import handles as store
from toolcrib.store.handles import HandleRow

__all__ = ["issue_handles", "resolve_handle"]


async def issue_handles(gw: Gateway, member: str, tools: list[tuple[str, str]]) -> list[str]:
    """One new handle per ``(public_name, schema_hash)``, stored where every replica can read it."""
    now = gw.clock()
    rows = [HandleRow(new_handle(), member, name, schema, now) for name, schema in tools]
    await store.insert_handles(gw.db, rows)
    return [r.id for r in rows]


async def resolve_handle(gw: Gateway, member: str, handle_id: str) -> HandleRow:
    """Step 1 for a handle: unknown or another member's is ``not_found``; too old is ``handle_expired``."""
    row = await store.get_handle(gw.db, handle_id) if handle_id.startswith("act_") else None
    if row is None or row.member != member:
        raise NotFound("unknown action handle; search again")
    if gw.clock() - row.created_at > gw.settings.handle_ttl_seconds:
        raise HandleExpired("this action handle has expired; search again")
    return row
