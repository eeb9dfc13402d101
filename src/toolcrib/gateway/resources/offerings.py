"""What one connection's server offers besides tools, as listed by its session (R-16.1).

Each listing (``prompts``, ``resources``, ``resources/templates``) is read whole (paged through,
bounded) the first time it is needed, redacted like the connection's results, and kept on the
upstream session (``UpstreamSession.listings``) for :data:`LISTING_SECONDS`; the session empties
it when it starts again or when the server says its list changed. A server that does not offer
the kind (its capabilities) is not asked.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from toolcrib.errors import TooLarge
from toolcrib.gateway.calls.shaping import redact_value

if TYPE_CHECKING:  # the SDK loads with the first session, not with this module
    from mcp.client import Client

    from toolcrib.upstream.session import UpstreamSession

__all__ = ["FRESH_SECONDS", "LISTING_SECONDS", "Kind", "listed"]

Kind = Literal["prompts", "resources", "resources/templates"]
LISTING_SECONDS = 30.0
"""How long a listing is used before it is read again (a server that announces changes says so
sooner); the policy cache time bounds how long a restriction change takes, not this."""
FRESH_SECONDS = 1.0
"""A read of a URI the kept listing does not name lists again when the listing is older than this:
a resource added since could go by a withheld name."""
_MAX_PAGES = 50
_FIELD = {"prompts": "prompts", "resources": "resources", "resources/templates": "resource_templates"}


async def listed(
    session: UpstreamSession, kind: Kind, secrets: Sequence[str], *, max_age: float = LISTING_SECONDS
) -> list[dict[str, Any]]:
    """The server's ``kind`` as JSON objects (empty when it offers none), redacted by ``secrets``;
    a listing older than ``max_age`` seconds is read again."""
    held = session.listings.get(kind)
    now = time.monotonic()
    if held is not None and now - held[0] < max_age:
        items: list[dict[str, Any]] = held[1]
        return items
    capabilities = await session.capabilities()
    offered = capabilities.prompts if kind == "prompts" else capabilities.resources
    items = [] if offered is None else redact_value(await _read_all(session, kind), list(secrets))
    session.listings[kind] = (now, items)
    return items


async def _read_all(session: UpstreamSession, kind: Kind) -> list[dict[str, Any]]:
    """Every page; more than :data:`_MAX_PAGES` is ``too_large``: a listing is never kept cut,
    since a read decides a resource's name by it (a name left out could be a withheld one)."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await session.ask(f"{kind}/list", partial(_page, kind=kind, cursor=cursor))
        items.extend(
            i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in getattr(page, _FIELD[kind])
        )
        cursor = page.next_cursor
        if not cursor:
            return items
    raise TooLarge(f"{session.spec.name}: its {kind} list is over {_MAX_PAGES} pages")


async def _page(client: Client, *, kind: Kind, cursor: str | None) -> Any:
    if kind == "prompts":
        return await client.list_prompts(cursor=cursor, cache_mode="refresh")
    if kind == "resources":
        return await client.list_resources(cursor=cursor, cache_mode="refresh")
    return await client.list_resource_templates(cursor=cursor, cache_mode="refresh")
