"""The request-body bound of every route (R-2.4), enforced as the bytes arrive (#10).

A declared ``Content-Length`` over the bound is refused before anything is read; a body without
one (chunked) is counted chunk by chunk and refused the moment the count crosses the bound, so the
server never reads more than the bound plus one chunk. Nothing is buffered here: a route still
reads its body itself, after its authentication, and a refused body is never parsed.

A response sent before the body was read to its end (a 401 ahead of the body, a 413) closes the
connection, so the rest of that body is not read at all.
"""

from __future__ import annotations

import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit"]


class _BodyTooLarge(Exception):
    """Raised out of ``receive`` to stop the route that reads an oversized body."""


class _Request:
    """What one request has sent and been answered so far."""

    def __init__(self, scope: Scope) -> None:
        headers = Headers(scope=scope)
        self.declared = headers.get("content-length")
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self.body_done = not chunked and self.declared in (None, "0")
        self.received = 0
        self.started = False
        self.refused = False


class BodyLimit:
    """ASGI middleware: request bodies over ``limit`` bytes are answered 413 ``too_large``."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        state = _Request(scope)
        if not _declared_within(state.declared, self._limit):
            await self._refuse(state, send)
            return

        async def counted_receive() -> Message:
            if state.refused:
                raise _BodyTooLarge
            message = await receive()
            if message["type"] == "http.request":
                state.received += len(message.get("body", b""))
                state.body_done = not message.get("more_body", False)
                if state.received > self._limit:
                    await self._refuse(state, send)
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            if state.refused:
                return  # the route's own answer after ours (an error page of its catch-all) is dropped
            await _send(state, send, message)

        try:
            await self._app(scope, counted_receive, guarded_send)
        except _BodyTooLarge:
            if not state.refused:
                raise

    async def _refuse(self, state: _Request, send: Send) -> None:
        if state.refused or state.started:
            state.refused = True
            return
        state.refused = True
        message = f"the request body is over the limit of {self._limit} bytes"
        body = json.dumps({"error": {"code": "too_large", "message": message}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _send(state: _Request, send: Send, message: Message) -> None:
    if message["type"] == "http.response.start":
        state.started = True
        if not state.body_done:  # answered ahead of the body: do not read the rest of it
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
    await send(message)


def _declared_within(declared: str | None, limit: int) -> bool:
    if declared is None:
        return True
    try:
        return 0 <= int(declared) <= limit
    except ValueError:
        return False
