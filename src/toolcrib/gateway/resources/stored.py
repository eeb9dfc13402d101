"""A prompt or a read that was cut is kept in full for a while, like a tool result (R-12.3).

The shaped answer names it in ``_meta.toolcrib_result_id``; ``toolcrib__results__read`` pages
through the redacted, uncut answer for the same member after the resolver allows the item's name
again (its operation is ``{account}__{name}``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from toolcrib.auth.tokens import new_result_id
from toolcrib.gateway.calls.shaping import RESULT_ID_KEY, TRUNCATED_KEY, Caps
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import results as store
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.results import ResultRow

__all__ = ["Shape", "shaped_and_stored"]

Shape = Callable[[Mapping[str, Any], Caps], dict[str, Any]]
"""Redact and cap an answer within the caps given."""
_UNCAPPED = Caps(max_string=sys.maxsize, max_items=sys.maxsize, max_keys=sys.maxsize, max_depth=sys.maxsize)


async def shaped_and_stored(
    storage: Storage,
    principal: Principal,
    row: ConnectionRow,
    name: str,
    raw: Mapping[str, Any],
    shape: Shape,
) -> dict[str, Any]:
    """``raw`` shaped (in a worker thread: it came from an upstream); when cut, stored in full."""
    result = await anyio.to_thread.run_sync(shape, raw, Caps())
    meta = result.get("_meta")
    if not isinstance(meta, dict) or not meta.get(TRUNCATED_KEY):
        return result
    full = await anyio.to_thread.run_sync(shape, raw, _UNCAPPED)
    kept = ResultRow(
        id=new_result_id(),
        member=principal.member,
        operation=f"{row.name}__{name}"[:320],
        account=row.name,
        connector=row.connector,
        payload=json.dumps(full, ensure_ascii=False),
        created_at=storage.clock(),
    )
    await store.insert_result(storage.db, kept)
    result["_meta"] = {**meta, RESULT_ID_KEY: kept.id}
    return result
