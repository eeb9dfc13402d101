"""``logging/setLevel``: the level a client's session asked for (R-2.6).

Before 2026-07-28 a client sets, once per session, the lowest level of log line it wants; the
upstream's log lines at or above it are relayed during its calls (``web.interaction``). The SDK
builds a new request context per request, so the level is kept here by the session's
``Mcp-Session-Id`` — which the SDK binds to the member who opened it — in a bounded map (the
oldest sessions are forgotten first). A stateless request has no session: its level is accepted
and has no lasting effect, as the protocol allows.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

__all__ = ["MAX_SESSIONS", "SessionLogLevels"]

MAX_SESSIONS = 10_000
SESSION_HEADER = "mcp-session-id"


def _session_id(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    value = headers.get(SESSION_HEADER) if headers is not None else None
    return value if isinstance(value, str) and value else None


class SessionLogLevels:
    """Each session's requested level, at most :data:`MAX_SESSIONS` of them."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._levels: OrderedDict[str, types.LoggingLevel] = OrderedDict()
        self._limit = limit

    async def on_set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The ``logging/setLevel`` handler: remember the level, answer ``{}``."""
        session = _session_id(ctx)
        if session is not None:
            self._levels[session] = params.level
            self._levels.move_to_end(session)
            while len(self._levels) > self._limit:
                self._levels.popitem(last=False)
        return types.EmptyResult()

    def level_of(self, ctx: ServerRequestContext[Any]) -> types.LoggingLevel | None:
        """The level this request's session set, or None when it set none."""
        session = _session_id(ctx)
        return self._levels.get(session) if session is not None else None
