"""An HTTP transport that bounds what an HTTP upstream can make the gateway hold.

The SDK's Streamable HTTP client reads a JSON response whole (``response.aread()``), with no limit.
This transport, under the SDK's client, reads a JSON answer to a POST itself, at most
``limit`` bytes: a larger one (by its ``Content-Length`` or by counting) is closed unread and
replaced by a JSON-RPC error answering the same request id (the session turns it into
``too_large``). Server-sent event streams are bounded per event by the SDK's own
``max_sse_event_size``, which the session sets to the same limit. Bodies are asked for
uncompressed (``Accept-Encoding: identity``), so the bytes counted are the bytes parsed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from toolcrib.upstream.framing import MESSAGE_TOO_LARGE, too_large_data

__all__ = ["BoundedTransport"]


class BoundedTransport(httpx2.AsyncBaseTransport):
    """Wraps a real transport; JSON answers to POSTs are read here within ``limit`` bytes."""

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        content_type = response.headers.get("content-type", "").lower()
        if request.method != "POST" or not content_type.startswith("application/json"):
            return response
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            await response.aclose()
            return _refusal(request, response, int(declared), self._limit)
        parts: list[bytes] = []
        size = 0
        try:
            async for chunk in response.stream:  # type: ignore[union-attr]
                size += len(chunk)
                if size > self._limit:
                    return _refusal(request, response, size, self._limit)
                parts.append(chunk)
        finally:
            await response.aclose()
        return httpx2.Response(
            response.status_code,
            headers=_kept_headers(response),
            content=b"".join(parts),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _kept_headers(response: httpx2.Response) -> list[tuple[str, str]]:
    dropped = {"content-length", "transfer-encoding", "content-encoding"}
    return [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]


def _refusal(request: httpx2.Request, response: httpx2.Response, size: int, limit: int) -> httpx2.Response:
    try:
        request_id: Any = json.loads(request.content).get("id")
    except (ValueError, AttributeError):
        request_id = None
    if not isinstance(request_id, int | str):
        return httpx2.Response(502, headers={"content-type": "text/plain"}, content=b"", request=request)
    error = {
        "code": MESSAGE_TOO_LARGE,
        "message": f"the upstream's message of at least {size} bytes is over the limit of {limit} bytes",
        "data": too_large_data(size, limit),
    }
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [(k, v) for k, v in _kept_headers(response) if k.lower() != "content-type"]
    headers.append(("content-type", "application/json"))
    return httpx2.Response(200, headers=headers, content=body, request=request)
