"""``resources/subscribe`` through the gateway, where the upstream offers it (R-16.3).

A subscription passes the gates of a read (``tool:execute``, ``mcp:read``, a reachable active
connection, the resolver on the resource's name; withheld answers as unknown) and is then made
at the upstream once, however many clients subscribe; its ``notifications/resources/updated``
come back with the gateway URI. An upstream that offers no subscriptions answers
``invalid_arguments`` saying so.
"""

from __future__ import annotations

from toolcrib.errors import InvalidArguments
from toolcrib.gateway.connections.manage import spec_of
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources.naming import parse_gateway_uri
from toolcrib.gateway.resources.reading import gated_resource
from toolcrib.policy.gates import Principal

__all__ = ["subscribe", "unsubscribe"]


async def subscribe(gw: Gateway, principal: Principal, uri: str) -> None:
    """Subscribe ``principal`` to the resource at the gateway URI ``uri`` at its upstream."""
    found = await gated_resource(gw, principal, uri)
    session, original, account = found.session, found.original, found.row.name
    if not await session.subscribe(original):
        raise InvalidArguments(f"the server of {account} does not offer resource subscriptions")


async def unsubscribe(gw: Gateway, principal: Principal, uri: str) -> None:
    """End the upstream subscription to ``uri`` (the last client subscribed to it left)."""
    parsed = parse_gateway_uri(uri)
    row = gw.catalog.connections.get(parsed[0]) if parsed is not None else None
    if parsed is None or row is None:
        return
    await gw.upstreams.session(spec_of(gw, row, principal.member)).unsubscribe(parsed[1])
