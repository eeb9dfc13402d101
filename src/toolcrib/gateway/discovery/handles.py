"""Action handles: fresh per card, bound to the member, 10 minutes, pinned to the schema hash (R-5.10).

Every handle is stored, so every replica resolves it. A stored handle never changes: it is only
ever inserted, and deleted by housekeeping once expired. This process therefore keeps the handles
it issued or resolved in memory and answers from there without a database read: the memory copy is
the row itself, and expiry is decided from its ``created_at`` on every call, exactly as from the
store. A handle another replica issued is read from the store once, then held (#12).
"""

from __future__ import annotations

from collections import OrderedDict

from toolcrib.auth.tokens import new_handle
from toolcrib.errors import HandleExpired, NotFound
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import handles as store
from toolcrib.store.handles import HandleRow
from toolcrib.store.learning import SearchRow

__all__ = ["HELD_HANDLES", "HeldHandles"]

HELD_HANDLES = 20_000
"""How many handles one process holds in memory; the oldest go first (they are read again if used)."""


class HeldHandles:
    """The handles this process issued or resolved, over the store every replica reads."""

    def __init__(self, storage: Storage, ttl_seconds: float) -> None:
        self._storage = storage
        self._ttl = ttl_seconds
        self._held: OrderedDict[str, HandleRow] = OrderedDict()

    def _hold(self, rows: list[HandleRow]) -> None:
        for row in rows:
            self._held[row.id] = row
        while len(self._held) > HELD_HANDLES:
            self._held.popitem(last=False)

    async def issue(
        self, principal: Principal, tools: list[tuple[str, str]], search: SearchRow | None = None
    ) -> list[str]:
        """One new handle per ``(public_name, schema_hash)`` for ``principal``'s member, stored where
        every replica can read it; ``search``, the search that issued them (R-5.12), stored with them."""
        now = self._storage.clock()
        sid = search.id if search is not None else None
        rows = [HandleRow(new_handle(), principal.member, name, schema, now, sid) for name, schema in tools]
        await store.insert_handles(self._storage.db, rows, search if rows else None)
        self._hold(rows)
        return [r.id for r in rows]

    async def resolve(self, principal: Principal, handle_id: str) -> HandleRow:
        """Step 1 for a handle: unknown or another member's is ``not_found``; too old ``handle_expired``."""
        row = self._held.get(handle_id)
        if row is None and handle_id.startswith("act_"):
            row = await store.get_handle(self._storage.db, handle_id)
            if row is not None:
                self._hold([row])
        if row is None or row.member != principal.member:
            raise NotFound("unknown action handle; search again")
        if self._storage.clock() - row.created_at > self._ttl:
            raise HandleExpired("this action handle has expired; search again")
        return row
