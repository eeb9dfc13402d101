"""The ``/auth`` pages' common parts, and the personal-token sign-in page ``/auth/login``.

Pages are Jinja2 templates (``templates/auth``) with autoescaping, answered with a strict CSP (no
script at all), ``frame-ancestors 'none'`` and ``no-store``. ``/auth/login`` takes a personal
access token when no OpenID Provider is configured (and beside its link when one is): the token is
checked once, then a session grant of its own is what the cookie holds (``web/signin.py``): made
from the token (R-7.11), within its scopes, ending no later, revoked with it.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from toolcrib.errors import NotFound, Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity.grants import new_session_grant, parent_of
from toolcrib.policy.gates import Principal
from toolcrib.web.address_limits import AddressLimiter, client_address, too_many
from toolcrib.web.admin.session import csrf_ok, same_origin
from toolcrib.web.cookies import is_secure
from toolcrib.web.signin import PATH, idp_label, safe_next, sign_in

__all__ = ["csp", "csrf_refused", "login", "login_page", "page"]

LOGIN_NONCE = "toolcrib_auth_login"
_ENV = Environment(loader=PackageLoader("toolcrib.web", "templates"), autoescape=True)


def _iso(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    return ""


_ENV.filters["iso"] = _iso


def csp(form_targets: str = "") -> str:
    """No script, no frames; forms post here (and, on the consent page, to the client's redirect
    origin, which a browser applies to the redirect after the post)."""
    return (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
        f"form-action 'self'{' ' + form_targets if form_targets else ''}; frame-ancestors 'none'"
    )


def page(
    template: str,
    *,
    status: int = 200,
    me: Principal | None = None,
    form_targets: str = "",
    **context: Any,
) -> HTMLResponse:
    html = _ENV.get_template("auth/" + template).render(me=me, **context)
    headers = {
        "Content-Security-Policy": csp(form_targets),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    return HTMLResponse(html, status, headers=headers)


def csrf_refused(me: Principal | None) -> HTMLResponse:
    message = "This form did not come from this page (or the page was too old). Nothing was changed."
    return page("refused.html", status=403, me=me, code="csrf_failed", message=message)


def _login_form(request: Request, next_path: str, *, status: int = 200, code: str | None = None) -> Response:
    gw: Gateway = request.app.state.gateway
    nonce = request.cookies.get(LOGIN_NONCE) or secrets.token_urlsafe(24)
    messages = {
        "unauthenticated": "That token is unknown, revoked or expired, or its member is not active.",
        "csrf_failed": "The form had expired; it is fresh again, sign in once more.",
    }
    response = page(
        "login.html",
        status=status,
        code=code,
        message=messages.get(code or "", ""),
        nonce=nonce,
        next=next_path,
        idp=idp_label(gw.settings),
    )
    response.set_cookie(
        LOGIN_NONCE, nonce, path=PATH, secure=is_secure(request), httponly=True, samesite="strict"
    )
    return response


async def login_page(request: Request) -> Response:
    return _login_form(request, safe_next(request.query_params.get("next")))


async def login(request: Request) -> Response:
    """POST ``/auth/login``: rate limited per address, double-submit nonce, then the token."""
    gw: Gateway = request.app.state.gateway
    limiter: AddressLimiter = request.app.state.address_limiter
    if (wait := limiter.retry_after("login", client_address(request))) is not None:
        return too_many(wait)
    form = await request.form()
    next_raw = form.get("next")
    next_path = safe_next(next_raw if isinstance(next_raw, str) else None)
    if not same_origin(request, gw.settings.allowed_origins) or not csrf_ok(
        request.cookies.get(LOGIN_NONCE), form.get("nonce")
    ):
        return _login_form(request, next_path, status=403, code="csrf_failed")
    token = form.get("token")
    try:
        given = token.strip() if isinstance(token, str) else ""
        if given.startswith("tca_"):  # a client's access token is not a person's sign-in
            raise Unauthenticated("sign in with a personal access token")
        principal = await gw.bearers.authenticate(given)
        # the session is the token's child (R-7.11): its scopes or fewer, ending and revoked with it
        session_token = await new_session_grant(
            gw.store,
            principal.member,
            principal.scopes,
            parent=parent_of(principal),
            ends=principal.expires_at,
        )
    except (Unauthenticated, NotFound):
        return _login_form(request, next_path, status=401, code="unauthenticated")
    response = RedirectResponse(next_path, 303)
    sign_in(response, request, gw.store, session_token)
    response.delete_cookie(LOGIN_NONCE, path=PATH)
    return response
