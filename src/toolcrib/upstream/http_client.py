"""The HTTP client of an upstream session: one request's broken connection fails that request only.

The SDK's Streamable HTTP client sends each request as a POST of its own, in a task of its own, in
one task group per session: an exception from one POST (the server closed the connection without
an answer, a reset mid-request) ends that task group, so every call in flight on the session failed
with "connection closed" and the session was started again. With 50 callers on one upstream, the
one POST that met a closed connection took all 50 calls down (#12: an upstream stalled for ~6 s
while 50 clients called it failed 1,404 of 1,500 calls).

:class:`UpstreamHttpClient` answers such a POST itself, for that request alone: a 502 whose body is
the JSON-RPC error of that request id, which the SDK hands to that request's caller (the way it
hands back any error a server answers with). The other calls, and the session, go on. Failures to
*connect* are not contained: the server is not there, and the session's own restart and back-off
handle that (R-13.2). A body that breaks while it is read is contained by ``http_bound``'s stream.

Every connection goes through the gateway's address policy (R-13.5, ``toolcrib.addresses``): a
host it will not call is refused before a socket is opened, and the POST that met the refusal is
answered the same way, with an error naming the host and why; ``on_refused`` is told, so the
session can give that as its reason.

Idle connections are also let go sooner than servers usually close them (``KEEPALIVE_SECONDS``
against uvicorn's 5 s), so a request is not sent on a connection the server is closing just then.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx2
from mcp_types.jsonrpc import INTERNAL_ERROR

from toolcrib.addresses import AddressPolicy, AddressRefused, guarded_transport

__all__ = ["BROKEN_CONNECTION", "KEEPALIVE_SECONDS", "UpstreamHttpClient"]

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 2.0
"""How long an idle connection to an upstream is kept: under the 5 s after which uvicorn (most
Python MCP servers) closes one, so the two never race over the same idle connection."""

BROKEN_CONNECTION = (
    httpx2.ProtocolError,  # e.g. "Server disconnected without sending a response"
    httpx2.ReadError,
    httpx2.WriteError,
    httpx2.CloseError,
    httpx2.ReadTimeout,
    httpx2.WriteTimeout,
    httpx2.PoolTimeout,
)
"""A connection that was made, then broke: contained to its one request (``http_bound`` contains
the same failures while an answer's body is read). A failure to connect is not among them."""


class UpstreamHttpClient(httpx2.AsyncClient):
    """An ``httpx2.AsyncClient`` whose JSON-RPC POSTs answer for themselves when their connection
    breaks (see ``_failed_request``)."""

    def __init__(
        self,
        addresses: AddressPolicy,
        on_refused: Callable[[AddressRefused], None] | None = None,
        **options: Any,
    ) -> None:
        limits = options.pop("limits", httpx2.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
        options.setdefault("transport", guarded_transport(addresses, limits=limits))
        super().__init__(**options)
        self._on_refused = on_refused

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        try:
            return await super().send(request, **options)
        except AddressRefused as exc:
            if self._on_refused is not None:
                self._on_refused(exc)
            answer = _failed_request(request, exc, exc.message)
            if answer is None:
                raise
            return answer
        except BROKEN_CONNECTION as exc:
            answer = _failed_request(request, exc)
            if answer is None:
                raise
            return answer


def _failed_request(
    request: httpx2.Request, exc: Exception, reason: str | None = None
) -> httpx2.Response | None:
    """What to hand the SDK for a JSON-RPC POST whose connection broke, or None when ``request``
    carried no JSON-RPC message (other traffic is not contained).

    A request gets a 502 carrying its JSON-RPC error, which reaches its caller; a notification or
    a response to the server has no caller to tell, and gets 202 (what the server would have
    answered): it is lost as it would have been, but the session is not.
    """
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if "method" not in message or message.get("id") is None:
        logger.info("an upstream message was lost with its connection (%s)", type(exc).__name__)
        return httpx2.Response(202, request=request)
    reason = reason or f"the connection broke before the server answered ({type(exc).__name__})"
    body = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": INTERNAL_ERROR, "message": reason}}
    return httpx2.Response(502, json=body, request=request)
