"""Change notifications of upstreams' prompts and resources, passed to the clients that listed
them (R-16.3, #34).

A client with a session (stateful mode, before 2026-07-28) that lists prompts or resources is
remembered with who it is, by its ``Mcp-Session-Id``, in a bounded map (the oldest forgotten
first). When an upstream says its prompts or resources changed, each remembered client that may
reach that connection (the resolver, now) is sent ``notifications/prompts/list_changed`` or
``notifications/resources/list_changed``; a client whose session is gone is forgotten. A stateless
request has no session to notify; a 2026-07-28 client would listen on ``subscriptions/listen``,
which this gateway does not serve yet.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcp.server.context import ServerRequestContext

from toolcrib.gateway.core import Gateway
from toolcrib.gateway.resources.access import reaches_account
from toolcrib.policy.gates import Principal
from toolcrib.web.log_levels import MAX_SESSIONS, SESSION_HEADER

__all__ = ["Listeners"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Listener:
    session: Any  # the SDK's server session of the client
    principal: Principal


class Listeners:
    """The clients to tell about changes, at most ``limit`` of them."""

    def __init__(self, gw: Gateway, limit: int = MAX_SESSIONS) -> None:
        self._gw = gw
        self._limit = limit
        self._by_session: OrderedDict[str, _Listener] = OrderedDict()

    def seen(self, ctx: ServerRequestContext[Any], principal: Principal) -> None:
        """Remember the client of this request, when it has a session."""
        headers = getattr(ctx.request, "headers", None)
        session_id = headers.get(SESSION_HEADER) if headers is not None else None
        if not isinstance(session_id, str) or not session_id:
            return
        self._by_session[session_id] = _Listener(ctx.session, principal)
        self._by_session.move_to_end(session_id)
        while len(self._by_session) > self._limit:
            self._by_session.popitem(last=False)

    async def changed(self, account: str, kind: str) -> None:
        """Tell the clients that may reach ``account`` that its ``kind`` changed."""
        row = self._gw.connections.get(account)
        if row is None or kind not in ("prompts", "resources"):
            return
        rules = (await self._gw.policy()).rules
        for session_id, listener in list(self._by_session.items()):
            if not reaches_account(rules, listener.principal, row):
                continue
            try:
                if kind == "prompts":
                    await listener.session.send_prompt_list_changed()
                else:
                    await listener.session.send_resource_list_changed()
            except Exception as exc:  # the client went away: forget it
                logger.debug("a client session ended: %s", type(exc).__name__)
                self._by_session.pop(session_id, None)
