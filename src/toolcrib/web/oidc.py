"""``/auth/oidc/start`` and ``/auth/oidc/callback``: sign-in at the organization's OpenID Provider
(R-7.7, R-7.8), for the console (single sign-on) and for the authorization server's sign-in.

``start`` keeps the flow's ``state``, ``nonce`` and PKCE verifier sealed (``gw.store.box``) in a
short-lived cookie limited to ``/auth/oidc`` (``SameSite=Lax``: the provider sends the person back
with a top-level GET from its own site) and sends the browser to the provider. ``callback``
completes it (``gateway.identity.idp.complete_sign_in``) and then, for a ``next`` under ``/admin``, sets the
console's session cookie; for any other ``next``, the ``/auth`` sign-in cookie
(``web.signin.sign_in``). The console's cookie is ``SameSite=Strict``, and a browser does not send
such a cookie on a redirect chain that began at another site (the provider), so the way on to
the console is a small page that moves on by itself (a same-site navigation), not a redirect.

A refusal is a page naming the error as RFC 6749 / OIDC Core name it and its reason; nothing the
provider wrote is echoed. This module (and Authlib with it) is imported only when
``TOOLCRIB_OIDC_ISSUER`` is set.
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from toolcrib.auth.oidc import PENDING_SECONDS, OIDCClient, OIDCConfig, Pending
from toolcrib.errors import ConfigError, SignInRefused
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import idp
from toolcrib.gateway.storage import Storage
from toolcrib.settings import Settings
from toolcrib.web import signin
from toolcrib.web.address_limits import by_address
from toolcrib.web.admin.session import set_session
from toolcrib.web.cookies import is_secure

__all__ = ["CALLBACK_PATH", "COOKIE", "client_for", "client_of", "routes"]

COOKIE = "toolcrib_oidc"
PATH = "/auth/oidc"
CALLBACK_PATH = PATH + "/callback"
_MAX_VALUE = 4096
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
_STATUS = {"access_denied": 403, "server_error": 502, "temporarily_unavailable": 503}


def routes(settings: Settings) -> list[Route]:
    """The two routes; refuses at start-up a role map that would refuse everyone later."""
    idp.check_settings(settings)
    if not settings.oidc_client_id:
        raise ConfigError("TOOLCRIB_OIDC_ISSUER is set but TOOLCRIB_OIDC_CLIENT_ID is not")
    return [  # limited per client address like every sign-in endpoint
        Route(PATH + "/start", by_address(start), methods=["GET"]),
        Route(CALLBACK_PATH, by_address(callback), methods=["GET"]),
    ]


def client_for(request: Request) -> OIDCClient:
    """The process's one client (it caches discovery and keys); a test may put its own there."""
    return client_of(request.app.state)


def client_of(state: Any) -> OIDCClient:
    """The one client kept in the app's ``state`` (made at first use)."""
    client: OIDCClient | None = getattr(state, "oidc", None)
    if client is None:
        gw: Gateway = state.gateway
        s = gw.settings
        assert s.oidc_issuer
        assert s.oidc_client_id
        config = OIDCConfig(
            s.oidc_issuer,
            s.oidc_client_id,
            s.oidc_client_secret,
            s.oidc_scopes,
            s.resource_url + CALLBACK_PATH,
        )
        client = state.oidc = OIDCClient(config, clock=gw.store.clock)
    return client


def safe_next(value: str | None) -> str:
    """A path on this gateway (never another site: ``//host`` and ``/\\host`` are refused)."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")) or len(value) > 2048:
        return "/admin/"
    if any(ord(c) < 0x20 or c == "\\" for c in value):
        return "/admin/"
    return value


def _for_console(next_path: str) -> bool:
    return next_path == "/admin" or next_path.startswith("/admin/")


async def start(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    next_path = safe_next(request.query_params.get("next"))
    try:
        url, pending = await client_for(request).begin(next_path)
    except SignInRefused as exc:
        return _refused(exc, next_path)
    response = RedirectResponse(url, 303, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        COOKIE, gw.store.box.seal(pending.to_json()), max_age=int(PENDING_SECONDS), path=PATH,
        secure=is_secure(request), httponly=True, samesite="lax",
    )  # fmt: skip
    return response


def _pending(request: Request, storage: Storage) -> Pending | None:
    try:
        return Pending.from_json(storage.box.open(request.cookies.get(COOKIE)))
    except ConfigError:  # tampered with, or sealed under another key
        return None


async def callback(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    params = {
        k: v[:_MAX_VALUE] for k, v in request.query_params.items() if k in ("code", "state", "error", "iss")
    }
    pending = _pending(request, gw.store)
    next_path = safe_next(pending.next if pending else None)
    try:
        signed, token = await idp.complete_sign_in(gw, client_for(request), params, pending)
    except SignInRefused as exc:
        response = _refused(exc, next_path)
    else:
        if _for_console(next_path):
            response = _onward(next_path, signed.member.name)
            set_session(response, request, gw.store, token, sso=True)
        else:
            response = RedirectResponse(next_path, 303, headers={"Cache-Control": "no-store"})
            signin.sign_in(response, request, gw.store, token)
    response.delete_cookie(COOKIE, path=PATH, secure=is_secure(request), httponly=True, samesite="lax")
    return response


def _onward(next_path: str, member: str) -> Response:
    """A page that moves on to ``next_path`` at once, by the browser's own (same-site) navigation."""
    target = escape(next_path)
    body = (
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">'
        f"<title>Signed in</title><h1>Signed in</h1><p>Signed in as {escape(member)}. "
        f'<a href="{target}">Continue</a></p>'
    )
    return HTMLResponse(body, headers=_HEADERS)


def _refused(exc: SignInRefused, next_path: str) -> Response:
    again = "/admin/login" if _for_console(next_path) else signin.login_url(next_path)
    body = (
        '<!doctype html><meta charset="utf-8"><title>Sign-in refused</title><h1>Sign-in refused</h1>'
        f'<p id="error"><code>{escape(exc.error)}</code> (<code>{escape(exc.reason)}</code>)</p>'
        f"<p>{escape(exc.message)}</p>"
        f'<p><a href="{escape(again)}">Back to sign-in</a></p>'
    )
    return HTMLResponse(body, status_code=_STATUS.get(exc.error, 400), headers=_HEADERS)
