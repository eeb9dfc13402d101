"""The start page of an upstream OAuth authorization (R-13.6): ``/admin/oauth/start/{token}``.

The link is handed to the person who started the authorization, alone. Opening it shows which
connection is being authorized at which provider; confirming it (a POST with a double-submit
nonce, once) sets a secret cookie in this browser and sends it on to the provider, and only the
browser with that cookie completes the flow at ``/oauth/callback``. A link preview or a crawler
that fetches the link (a GET) uses nothing up.

It lives under ``/admin`` so that the console's session cookie comes with it: a browser signed in
to the console as a member other than who started the flow is refused. Without a session the
confirmation alone binds the flow to this browser.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.gateway.connections.oauth_binding import (
    START_PATH,
    StartOffer,
    callback_cookie_path,
    confirm_start,
    read_start,
)
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal
from toolcrib.web.admin.render import render
from toolcrib.web.admin.session import csp_sending_forms_to, csrf_ok, open_session, same_origin
from toolcrib.web.cookies import is_secure
from toolcrib.web.oauth_callback import BROWSER_COOKIE
from toolcrib.web.rest import status_for

__all__ = ["routes"]

NONCE_COOKIE = "toolcrib_oauth_start"
_PATH = START_PATH.removeprefix("/admin").rstrip("/")  # inside the console's mount


async def _signed_in(request: Request, gw: Gateway) -> Principal | None:
    session = await open_session(request, gw)
    return session.principal if session is not None else None


def _refused(request: Request, exc: InBandError) -> Response:
    return render(request, "oauth_start.html", status=status_for(exc.code), error=exc.to_payload()["error"])


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def _page(request: Request, offer: StartOffer, *, status: int = 200, code: str | None = None) -> Response:
    nonce = request.cookies.get(NONCE_COOKIE) or secrets.token_urlsafe(24)
    response = render(request, "oauth_start.html", status=status, offer=offer, nonce=nonce, code=code)
    response.headers["content-security-policy"] = csp_sending_forms_to(_origin(offer.url))
    response.set_cookie(
        NONCE_COOKIE,
        nonce,
        path=START_PATH.rstrip("/"),
        secure=is_secure(request),
        httponly=True,
        samesite="strict",
    )
    return response


async def start_page(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    try:
        offer = await read_start(gw.store, request.path_params["token"], await _signed_in(request, gw))
    except InBandError as exc:
        return _refused(request, exc)
    return _page(request, offer)


async def confirm(request: Request) -> Response:
    """Confirmed in this browser: the cookie the callback asks for, then on to the provider."""
    gw: Gateway = request.app.state.gateway
    token = request.path_params["token"]
    form = await request.form()
    try:
        signed_in = await _signed_in(request, gw)
        if not same_origin(request, gw.settings.allowed_origins) or not csrf_ok(
            request.cookies.get(NONCE_COOKIE), form.get("nonce")
        ):
            return _page(
                request, await read_start(gw.store, token, signed_in), status=403, code="csrf_failed"
            )
        url, browser = await confirm_start(gw.store, token, signed_in)
    except InBandError as exc:
        return _refused(request, exc)
    response = RedirectResponse(url, 303)
    response.set_cookie(
        BROWSER_COOKIE,
        browser,
        max_age=int(gw.settings.upstream_oauth_pending_seconds) + 60,
        path=callback_cookie_path(gw),
        secure=is_secure(request),
        httponly=True,
        samesite="lax",  # sent with the provider's top-level redirect back to the callback
    )
    response.delete_cookie(NONCE_COOKIE, path=START_PATH.rstrip("/"))
    return response


def routes() -> list[Route]:
    return [
        Route(_PATH + "/{token}", start_page, methods=["GET"]),
        Route(_PATH + "/{token}", confirm, methods=["POST"]),
    ]
