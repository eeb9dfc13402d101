"""Bounds what an HTTP upstream can make the gateway hold in memory.

The SDK's Streamable HTTP client reads a JSON response whole (``response.aread()``), with no limit.
A response hook of the httpx2 client (so the client keeps its own transport, proxies and TLS
settings) wraps the body of every JSON answer to a POST in a stream that stops with
``MessageTooLarge`` once more than ``limit`` bytes have come (at once, when ``Content-Length``
already says so). The SDK answers the waiting request with a parse error carrying that message; the
session recognises it (``is_bounded_refusal``) and answers ``too_large``. Server-sent events are
bounded per event by the SDK's own ``max_sse_event_size``, which the session sets to the same limit.
Bodies are asked for uncompressed (``Accept-Encoding: identity``), so the bytes counted are the bytes
parsed; a server that compresses anyway is bounded on its compressed bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import httpx2
from mcp_types.jsonrpc import PARSE_ERROR

from toolcrib.upstream.http_client import BROKEN_CONNECTION

__all__ = ["BodyBroken", "MessageTooLarge", "bound_json_responses", "is_bounded_refusal"]

_MARK = "[toolcrib:too_large]"


class MessageTooLarge(httpx2.StreamError):
    """An HTTP answer went over the limit; its body is not read further."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{_MARK} the upstream's answer of at least {size} bytes is over {limit} bytes")


class BodyBroken(httpx2.StreamError):
    """The connection broke while an answer's body was read: a stream error, which the SDK turns
    into an error of that one request, not an end of the whole session (see ``http_client``)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"the connection broke while the answer was read ({type(cause).__name__})")


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, declared: int | None) -> None:
        self._inner = inner
        self._limit = limit
        self._declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._declared is not None and self._declared > self._limit:
            raise MessageTooLarge(self._declared, self._limit)
        size = 0
        try:
            async for chunk in self._inner:
                size += len(chunk)
                if size > self._limit:
                    raise MessageTooLarge(size, self._limit)
                yield chunk
        except BROKEN_CONNECTION as exc:
            raise BodyBroken(exc) from exc

    async def aclose(self) -> None:
        await self._inner.aclose()


def bound_json_responses(limit: int) -> Callable[[httpx2.Response], Coroutine[Any, Any, None]]:
    """A response hook bounding the JSON answers to POSTs at ``limit`` bytes."""

    async def bound(response: httpx2.Response) -> None:
        content_type = response.headers.get("content-type", "").lower()
        if response.request.method != "POST" or not content_type.startswith("application/json"):
            return
        if not isinstance(response.stream, httpx2.AsyncByteStream):
            return
        declared = response.headers.get("content-length", "")
        length = int(declared) if declared.isdigit() else None
        response.stream = _BoundedStream(response.stream, limit, length)

    return bound


def is_bounded_refusal(code: int, message: str) -> bool:
    """Whether an SDK error answer is the parse error ``MessageTooLarge`` turned into."""
    return code == PARSE_ERROR and _MARK in message
