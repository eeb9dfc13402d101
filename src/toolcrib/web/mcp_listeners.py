"""Change notifications of upstreams' prompts and resources, passed to the clients that listed
them (R-16.3, #34).

A client with a session (stateful mode, before 2026-07-28) that lists prompts or resources is
remembered with who it is, by its ``Mcp-Session-Id``, in a bounded map (the oldest forgotten
first). When an upstream says its prompts or resources changed, each remembered client that may
reach that connection (the resolver, now) is sent ``notifications/prompts/list_changed`` or
``notifications/resources/list_changed``; a client whose session is gone is forgotten. A client
subscribed to a resource (``resources/subscribe``) is sent ``notifications/resources/updated``
with its gateway URI. A stateless
request has no session to notify; a 2026-07-28 client would listen on ``subscriptions/listen``,
which this gateway does not serve yet.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import ServerRequestContext

from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources.access import reaches_account
from toolcrib.gateway.resources.naming import gateway_uri
from toolcrib.gateway.resources.subscribing import unsubscribe
from toolcrib.policy.gates import Principal
from toolcrib.web.log_levels import MAX_SESSIONS, SESSION_HEADER

__all__ = ["Listeners"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Listener:
    session: Any  # the SDK's server session of the client
    principal: Principal
    subscribed: set[str] = field(default_factory=set)  # gateway URIs (resources/subscribe)


class Listeners:
    """The clients to tell about changes, at most ``limit`` of them."""

    def __init__(self, gw: Gateway, limit: int = MAX_SESSIONS) -> None:
        self.also_held: Callable[[str], bool] = lambda uri: False
        """Whether something else (a listen stream) holds an upstream subscription too."""
        self._gw = gw
        self._limit = limit
        self._by_session: OrderedDict[str, _Listener] = OrderedDict()
        self._dropped: list[_Listener] = []  # forgotten, their upstream subscriptions not yet ended

    def seen(self, ctx: ServerRequestContext[Any], principal: Principal) -> _Listener | None:
        """Remember the client of this request, when it has a session (None: it has none)."""
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get(SESSION_HEADER) if headers is not None else None
        if not isinstance(session_id, str) or not session_id:
            return None
        known = self._by_session.get(session_id)
        if known is None or known.principal != principal:
            known = self._by_session[session_id] = _Listener(ctx.session, principal)
        self._by_session.move_to_end(session_id)
        while len(self._by_session) > self._limit:
            _, oldest = self._by_session.popitem(last=False)
            self._dropped.append(oldest)
        return known

    async def release(self) -> None:
        """End the upstream subscriptions that only forgotten clients held."""
        while self._dropped:
            gone = self._dropped.pop()
            for uri in gone.subscribed:
                if not self.subscribers(uri) and not self.also_held(uri):
                    await _quietly(unsubscribe(self._gw, gone.principal, uri))

    def subscribers(self, uri: str) -> int:
        """How many remembered clients are subscribed to the gateway URI ``uri``."""
        return sum(uri in listener.subscribed for listener in self._by_session.values())

    async def changed(self, account: str, kind: str, uri: str = "") -> None:
        """Tell the clients that may reach ``account`` that its ``kind`` list changed, or (kind
        ``updated``) the subscribers of the resource at ``uri`` that it was updated."""
        row = self._gw.catalog.connections.get(account)
        if row is None or kind not in ("prompts", "resources", "updated"):
            return
        rules = (await self._gw.policy.current()).rules
        at = gateway_uri(account, uri)
        for session_id, listener in list(self._by_session.items()):
            if not reaches_account(rules, listener.principal, row):
                continue
            if kind == "updated" and at not in listener.subscribed:
                continue
            try:
                await _tell(listener.session, kind, at)
            except Exception as exc:  # the client went away: forget it, and what it subscribed to
                logger.debug("a client session ended: %s", type(exc).__name__)
                self._dropped.append(listener)
                self._by_session.pop(session_id, None)
        await self.release()


async def _tell(session: Any, kind: str, uri: str) -> None:
    if kind == "prompts":
        await session.send_prompt_list_changed()
    elif kind == "resources":
        await session.send_resource_list_changed()
    else:
        await session.send_resource_updated(uri)


async def _quietly(work: Awaitable[None]) -> None:
    """An upstream unsubscription that may fail (the upstream went away too): logged, not raised."""
    try:
        await work
    except Exception as exc:
        logger.info("ending an upstream resource subscription failed: %s", type(exc).__name__)
