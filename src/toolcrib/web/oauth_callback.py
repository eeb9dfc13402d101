"""``GET /oauth/callback``: where an upstream's authorization server sends the person back (#14).

Unauthenticated by nature (a browser lands here); what makes it safe is the ``state`` it carries
(single-use, short-lived) and, since R-13.6, the cookie of the browser that confirmed the flow's
start link: a browser without it is refused (403, audited), so someone who got hold of the
provider's URL cannot bind the connection to their own account. The page says only whether the
connection is authorized; no code, token or upstream text is echoed.
"""

from __future__ import annotations

from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from toolcrib.errors import InBandError
from toolcrib.gateway.connections.oauth_binding import complete_callback
from toolcrib.gateway.core import Gateway

__all__ = ["BROWSER_COOKIE", "oauth_callback"]

BROWSER_COOKIE = "toolcrib_oauth"
"""The secret of the browser that confirmed a start link; set by the start page, read here."""
_MAX_VALUE = 4096
_STATUS = {"not_found": 404, "forbidden": 403}
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the callback's URL carries the code
}


def _page(status: int, title: str, text: str) -> Response:
    body = f"<!doctype html><title>{escape(title)}</title><h1>{escape(title)}</h1><p>{escape(text)}</p>"
    return HTMLResponse(body, status_code=status, headers=_HEADERS)


async def oauth_callback(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    query = {
        k: v[:_MAX_VALUE] for k, v in request.query_params.items() if k in ("code", "state", "iss", "error")
    }
    try:
        account, ok = await complete_callback(gw, query, request.cookies.get(BROWSER_COOKIE))
    except InBandError as exc:
        return _page(_STATUS.get(exc.code, 400), "Authorization not accepted", exc.message)
    if ok is None:
        return _page(202, "Authorization received", f"The connection {account} is being authorized.")
    if not ok:
        return _page(400, "Authorization failed", f"The connection {account} could not be authorized.")
    return _page(200, "Authorized", f"The connection {account} is authorized; you can close this page.")
