"""The span of each HTTP request (R-14.2), continuing the caller's W3C trace context.

ASGI middleware, put in front of the app only when traces are on (``toolcrib.tracing``). The span
is named by the method and the first segment of the path (``POST /mcp``, ``POST /api``,
``GET /admin``), a closed enough set for a tracing backend's index; it carries the method, the
path, the status and the member the route authenticated. Never the query string, a header or a
body; a path that carries a secret (the token of an upstream OAuth start link) shows it as ``***``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolcrib import tracing
from toolcrib.gateway.connections.oauth_binding import START_PATH
from toolcrib.logs import shown_path

__all__ = ["SECRET_PATHS", "TraceRequests", "route_of"]

SECRET_PATHS = (START_PATH,)
"""Paths whose next segment is a secret (#32): shown as ``***`` in spans and log lines."""

_MAX_PATH = 200


def route_of(path: str) -> str:
    """The first segment of ``path`` (``/api/members/list`` -> ``/api``)."""
    first = path.lstrip("/").split("/", 1)[0]
    return "/" + first[:40]


class TraceRequests:
    """One server span per HTTP request; an incoming ``traceparent`` makes it that trace's child."""

    def __init__(self, app: Any, principal_key: str, secret_paths: Sequence[str] = SECRET_PATHS) -> None:
        self._app = app
        self._key = principal_key
        self._secret_paths = tuple(secret_paths)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers") or ()
            if name in (b"traceparent", b"tracestate")
        }
        method, path = str(scope.get("method", "")), str(scope.get("path", ""))
        attributes = {
            "http.request.method": method,
            "url.path": shown_path(path, self._secret_paths)[:_MAX_PATH],
        }
        with tracing.server_span(f"{method} {route_of(path)}", headers, attributes) as span:
            status = [500]

            async def sending(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status[0] = int(message["status"])
                await send(message)

            try:
                await self._app(scope, receive, sending)
            finally:
                span.set("http.response.status_code", status[0])
                member = getattr(scope.get(self._key), "member", None)
                if isinstance(member, str):
                    span.set(tracing.MEMBER, member)
                span.outcome("ok" if status[0] < 500 else "internal_error")
