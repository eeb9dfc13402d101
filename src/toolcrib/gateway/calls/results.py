"""Result shaping and stored results (SPEC section 12)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from toolcrib.auth.tokens import new_result_id
from toolcrib.errors import NotFound, Restricted
from toolcrib.gateway.calls.shaping import attach_result_id, shape_result
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import reach
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import results as store
from toolcrib.store.results import ResultRow

__all__ = ["is_protocol_meta_key", "read_result", "shape_and_store", "without_protocol_meta"]

MAX_PAGE = 32_000
_PROTOCOL_LABELS = frozenset({"modelcontextprotocol", "mcp"})


def is_protocol_meta_key(key: str) -> bool:
    """Whether a ``_meta`` key is in the namespace MCP reserves for itself.

    The MCP specification reserves a key's prefix (the dot-separated labels before its ``/``) when
    its second label is ``modelcontextprotocol`` or ``mcp`` (``io.modelcontextprotocol/``,
    ``dev.mcp/``), and, in its earlier wording, when one of those two labels is followed by another
    label (``modelcontextprotocol.io/``, ``tools.mcp.com/``). Both readings are honoured.
    """
    prefix, slash, _ = key.partition("/")
    if not slash or not prefix:
        return False
    labels = prefix.lower().split(".")
    return (len(labels) > 1 and labels[1] in _PROTOCOL_LABELS) or any(
        label in _PROTOCOL_LABELS for label in labels[:-1]
    )


def _strip(meta: Any) -> dict[str, Any] | None:
    if not isinstance(meta, Mapping):
        return None
    kept = {k: v for k, v in meta.items() if not is_protocol_meta_key(str(k))}
    return kept or None


def without_protocol_meta(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An upstream result without the ``_meta`` keys of the protocol's own namespace (R-3.3).

    Those keys (``io.modelcontextprotocol/serverInfo`` and the like) describe the upstream's side
    of its own connection; passed on, the client would take them for the gateway's. Other keys pass.
    """
    out = {k: v for k, v in raw.items() if k != "_meta"}
    if (meta := _strip(raw.get("_meta"))) is not None:
        out["_meta"] = meta
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_block_without_protocol_meta(block) for block in content]
    return out


def _block_without_protocol_meta(block: Any) -> Any:
    if not isinstance(block, Mapping) or "_meta" not in block:
        return block
    kept = {k: v for k, v in block.items() if k != "_meta"}
    if (meta := _strip(block["_meta"])) is not None:
        kept["_meta"] = meta
    return kept


async def shape_and_store(
    storage: Storage,
    principal: Principal,
    raw: Mapping[str, Any],
    *,
    secrets: Sequence[str],
    operation: str,
    account: str,
    connector: str,
) -> dict[str, Any]:
    """Drop the protocol's own ``_meta`` keys, redact, then cap (step 16); a cut result is kept in
    full and named (R-12.3). The walk over the result (megabytes, from an upstream) runs in a worker
    thread: the event loop only waits."""
    result, full = await anyio.to_thread.run_sync(_shaped, raw, tuple(secrets))
    if full is None:
        return result
    row = ResultRow(
        id=new_result_id(),
        member=principal.member,
        operation=operation,
        account=account,
        connector=connector,
        payload=full,
        created_at=storage.clock(),
    )
    await store.insert_result(storage.db, row)
    return attach_result_id(result, row.id)


def _shaped(raw: Mapping[str, Any], secrets: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    """The shaped result, and the full one as JSON when it was cut (else None)."""
    shaped = shape_result(without_protocol_meta(raw), secrets=secrets)
    if not shaped.truncated or shaped.full is None:
        return shaped.result, None
    return shaped.result, json.dumps(shaped.full, ensure_ascii=False)


async def read_result(
    gw: Gateway, principal: Principal, result_id: str, offset: int = 0, length: int = MAX_PAGE
) -> dict[str, Any]:
    """A page of a stored result, for the member who received it, after the resolver allows it again."""
    row = await store.get_result(gw.store.db, result_id)
    expired = row is not None and gw.store.clock() - row.created_at > gw.settings.result_ttl_seconds
    if row is None or row.member != principal.member or expired:
        raise NotFound("no such stored result")
    rules = (await gw.policy.current()).rules
    tool = row.operation.partition("__")[2]
    decision = reach.decide(
        rules, principal, account=row.account, connector=row.connector, tool=tool, where="result"
    )
    if not decision.allowed:
        raise Restricted(f"{row.operation} is withheld by a restriction")
    offset = max(0, int(offset))
    length = max(1, min(MAX_PAGE, int(length)))
    chunk = row.payload[offset : offset + length]
    end = offset + len(chunk)
    return {
        "result_id": row.id,
        "offset": offset,
        "length": len(chunk),
        "total": len(row.payload),
        "next_offset": end if end < len(row.payload) else None,
        "data": chunk,
    }
