"""The floor of any Python gateway (#12): a bare forwarder between the client and the upstream.

uvicorn (httptools, uvloop) takes each POST, and one shared keep-alive ``httpx2`` client sends its
body on to the upstream and the answer back: no MCP SDK, no authentication, no policy, no
database, no audit. Whatever a gateway built on the same Python stack does, it cannot cost less
than this; ``bench/overhead.py`` runs it beside the direct and the toolcrib sides, in the same run.

    python bench/_forwarder.py --port 8766 --upstream http://127.0.0.1:8765/mcp
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx2
import uvicorn

_HOP_BY_HOP = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}


def forwarder(upstream: str) -> Any:
    """An ASGI app that forwards every HTTP request to ``upstream``."""
    limits = httpx2.Limits(max_connections=200, max_keepalive_connections=200)
    client = httpx2.AsyncClient(timeout=60, limits=limits)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/healthz":  # the bench's readiness probe, answered here
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        answer = await client.request(scope["method"], upstream, content=body, headers=headers)
        out = [(k, v) for k, v in answer.headers.raw if k.lower() not in _HOP_BY_HOP]
        out.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": out})
        await send({"type": "http.response.body", "body": answer.content})

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    uvicorn.run(forwarder(args.upstream), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
