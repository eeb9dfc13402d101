"""A closed client connection cancels its ``/mcp`` request in stateless mode (#14).

With JSON responses (``stateless = true``) the SDK reads the request body and then never reads
the ASGI channel again, so a client that gives up — closes its HTTP connection — leaves the call
running upstream. Here the channel is watched once the body is read: ``http.disconnect`` cancels
the request's handling, which cancels the upstream call (the SDK sends it
``notifications/cancelled``) and closes its audit row as ``cancelled``.

Sessions (``stateless = false``) need none of this: a 2026-07-28 request on an SSE stream is
cancelled by the SDK when its stream closes, and an older session's client sends
``notifications/cancelled``.
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["cancel_on_disconnect"]


async def cancel_on_disconnect(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app``; once the request body is read, a closed connection cancels it."""
    body_read = anyio.Event()
    gone = anyio.Event()

    async def app_receive() -> Message:
        if body_read.is_set():  # the watcher owns the channel now; the app learns only of the end
            await gone.wait()
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_read.set()
        return message

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await body_read.wait()
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        await app(scope, app_receive, send)
        tg.cancel_scope.cancel()
