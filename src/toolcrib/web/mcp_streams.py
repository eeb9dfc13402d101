"""``subscriptions/listen`` for 2026-07-28 clients: the changes of the connections' prompts and
resources, and updates of subscribed resources, on one stream per request (R-16.3, #34).

The SDK's ``ListenHandler`` serves each stream over a bus of its own that carries only what its
caller may reach: an event of a connection goes to a stream when the resolver lets the stream's
member reach that connection (asked at each event), and a resource named in the request's
``resourceSubscriptions`` is honored only when it passes the gates of a subscription
(``gateway.resources.subscribing``); the others are left out of the acknowledgement. Without
``tool:execute`` and ``mcp:read`` a stream is acknowledged with nothing. At most
:data:`MAX_STREAMS` streams are open at once, and a stream names at most
:data:`MAX_URIS_PER_STREAM` resources. Served only when the gateway keeps sessions (a JSON
response cannot carry a stream).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types.jsonrpc import INTERNAL_ERROR

from toolcrib.errors import InBandError
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources.access import may_read, reaches_account
from toolcrib.gateway.resources.naming import gateway_uri
from toolcrib.gateway.resources.subscribing import subscribe, unsubscribe
from toolcrib.policy.gates import Principal

__all__ = ["MAX_STREAMS", "MAX_URIS_PER_STREAM", "Streams"]

MAX_STREAMS = 1024
MAX_URIS_PER_STREAM = 32
logger = logging.getLogger(__name__)
_Deliver = Callable[[ServerEvent], None]


class _Bus:
    """The bus of one stream: its listener is kept with who opened it and what it subscribed to."""

    def __init__(self, streams: Streams, principal: Principal, uris: frozenset[str]) -> None:
        self._streams = streams
        self._principal = principal
        self._uris = uris

    async def publish(self, event: ServerEvent) -> None:  # the gateway publishes through ``Streams``
        raise NotImplementedError

    def subscribe(self, listener: _Deliver) -> Callable[[], None]:
        token = object()
        self._streams.open[token] = (self._principal, listener, self._uris)

        def stop() -> None:
            self._streams.open.pop(token, None)

        return stop


class Streams:
    """The open listen streams of this process, and the handler that opens one."""

    def __init__(
        self,
        gw: Gateway,
        principal_of: Callable[[ServerRequestContext[Any]], Principal],
        also_held: Callable[[str], bool],
    ) -> None:
        self._gw = gw
        self._principal_of = principal_of
        self._also_held = also_held  # a client subscribed with resources/subscribe holds it too
        self.open: dict[object, tuple[Principal, _Deliver, frozenset[str]]] = {}

    def holds(self, uri: str) -> bool:
        """Whether an open stream asked for updates of the gateway URI ``uri``."""
        return any(uri in uris for _, _, uris in self.open.values())

    async def handler(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """The ``subscriptions/listen`` handler."""
        principal = self._principal_of(ctx)
        if len(self.open) >= MAX_STREAMS:
            raise MCPError(INTERNAL_ERROR, "Subscription limit reached")
        wanted = params.notifications
        reading = may_read(principal)
        uris = [u for u in (wanted.resource_subscriptions or [])[:MAX_URIS_PER_STREAM] if reading]
        honored = [u for u in uris if await self._subscribed(principal, u)]
        narrowed = wanted.model_copy(
            update={
                "tools_list_changed": None,  # the gateway's own tools/list does not change with upstreams
                "prompts_list_changed": wanted.prompts_list_changed if reading else None,
                "resources_list_changed": wanted.resources_list_changed if reading else None,
                "resource_subscriptions": honored or None,
            }
        )
        try:
            listen = ListenHandler(_Bus(self, principal, frozenset(honored)))
            return await listen(ctx, params.model_copy(update={"notifications": narrowed}))
        finally:
            for uri in honored:
                if not self.holds(uri) and not self._also_held(uri):
                    await _quietly(unsubscribe(self._gw, principal, uri))

    async def _subscribed(self, principal: Principal, uri: str) -> bool:
        try:
            await subscribe(self._gw, principal, uri)
        except InBandError:
            return False
        return True

    async def changed(self, account: str, kind: str, uri: str = "") -> None:
        """Deliver the change to the streams whose member may reach ``account``."""
        row = self._gw.catalog.connections.get(account)
        event: ServerEvent
        if row is None:
            return
        if kind == "prompts":
            event = PromptsListChanged()
        elif kind == "resources":
            event = ResourcesListChanged()
        elif kind == "updated":
            event = ResourceUpdated(uri=gateway_uri(account, uri))
        else:
            return
        rules = (await self._gw.policy.current()).rules
        for principal, deliver, _ in list(self.open.values()):
            if reaches_account(rules, principal, row):
                deliver(event)


async def _quietly(work: Any) -> None:
    try:
        await work
    except Exception as exc:
        logger.info("ending an upstream resource subscription failed: %s", type(exc).__name__)
