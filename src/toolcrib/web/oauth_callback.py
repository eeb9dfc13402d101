"""``GET /oauth/callback``: where an upstream's authorization server sends the person back (#14).

Unauthenticated by nature (a browser lands here); what makes it safe is the ``state`` it carries:
single-use, short-lived, known only to the flow that made the authorize URL. The page says only
whether the connection is authorized; no code, token or upstream text is echoed.
"""

from __future__ import annotations

from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from toolcrib.errors import InBandError
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.oauth import complete_callback

__all__ = ["oauth_callback"]

_MAX_VALUE = 4096


def _page(status: int, title: str, text: str) -> Response:
    body = f"<!doctype html><title>{escape(title)}</title><h1>{escape(title)}</h1><p>{escape(text)}</p>"
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


async def oauth_callback(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    query = {
        k: v[:_MAX_VALUE] for k, v in request.query_params.items() if k in ("code", "state", "iss", "error")
    }
    try:
        account, ok = await complete_callback(gw, query)
    except InBandError as exc:
        status = 404 if exc.code == "not_found" else 400
        return _page(status, "Authorization not accepted", exc.message)
    if ok is None:
        return _page(202, "Authorization received", f"The connection {account} is being authorized.")
    if not ok:
        return _page(400, "Authorization failed", f"The connection {account} could not be authorized.")
    return _page(200, "Authorized", f"The connection {account} is authorized; you can close this page.")
