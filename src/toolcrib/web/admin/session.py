"""The console's sign-in: a sealed session cookie, CSRF tokens and the security headers (#13).

The cookie holds the member's token sealed with the gateway's secret key (Fernet: encrypted and
authenticated), a CSRF nonce and the time it was issued; it is ``HttpOnly``, ``SameSite=Strict``,
limited to ``/admin`` and ``Secure`` when the console is reached over https (or its public URL
is https). The token is
authenticated again on every request (R-7.6), so revoking it or suspending its member ends the
session at once. Every POST carries the session's nonce in a form field (a synchronizer token);
the sign-in form, which has no session yet, carries a nonce also set as a cookie (double submit).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolcrib.errors import Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.web.cookies import is_secure, open_sealed_session, set_sealed_session

__all__ = [
    "COOKIE",
    "LOGIN_COOKIE",
    "MAX_AGE_SECONDS",
    "SecurityHeaders",
    "Session",
    "clear_session",
    "csp_sending_forms_to",
    "csrf_ok",
    "login_nonce",
    "open_session",
    "same_origin",
    "set_login_nonce",
    "set_session",
]

COOKIE = "toolcrib_admin"
LOGIN_COOKIE = "toolcrib_admin_login"
PATH = "/admin"
MAX_AGE_SECONDS = 8 * 3600
"""A session lasts a working day at most; the token behind it may end it sooner."""

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" makes a browser send "Origin: null"
    (b"cache-control", b"no-store"),
]


@dataclass(frozen=True, slots=True)
class Session:
    principal: Principal
    csrf: str


def set_session(
    response: Response, request: Request, storage: Storage, token: str, *, sso: bool = False
) -> None:
    """Sign the browser in to the console with ``token``: a personal access token pasted on the
    sign-in page, or (``sso``) the sign-in session grant the identity provider's callback minted,
    which is no bearer token anywhere else (R-7.8)."""
    set_sealed_session(
        response,
        request,
        storage,
        name=COOKIE,
        path=PATH,
        max_age=MAX_AGE_SECONDS,
        samesite="strict",
        data={"token": token, "sso": sso},
    )


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path=PATH, secure=is_secure(request), httponly=True, samesite="strict")


async def open_session(request: Request, gw: Gateway) -> Session | None:
    """The signed-in member, or None: no cookie, a cookie not ours, too old, or a dead token."""
    data = open_sealed_session(request, gw.store, name=COOKIE, max_age=MAX_AGE_SECONDS)
    if data is None:
        return None
    try:
        principal = await gw.bearers.authenticate(str(data["token"]), session=data.get("sso") is True)
    except Unauthenticated:
        return None
    return Session(principal, str(data["csrf"]))


def login_nonce(request: Request) -> str:
    """The sign-in form's double-submit nonce: the cookie's when present, else a new one."""
    return request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(24)


def set_login_nonce(response: Response, request: Request, nonce: str) -> None:
    response.set_cookie(
        LOGIN_COOKIE, nonce, path=PATH, secure=is_secure(request), httponly=True, samesite="strict"
    )


def csrf_ok(expected: str | None, given: object) -> bool:
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(expected or "", given)


def same_origin(request: Request, allowed: list[str]) -> bool:
    """A POST from a page of this console: no cross-site fetch metadata, an Origin that is ours."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:  # not a browser's form post; the CSRF token still has to match
        return True
    own = f"{request.url.scheme}://{request.url.netloc}"
    return origin == own or origin in allowed


def csp_sending_forms_to(origin: str) -> str:
    """The console's CSP for a page whose form is answered with a redirect to ``origin`` (the
    OAuth start page, R-13.6): a browser checks ``form-action`` on that redirect too."""
    return CSP.replace("form-action 'self'", f"form-action 'self' {origin}")


class SecurityHeaders:
    """Every console response carries a strict CSP (no inline script), and refuses to be framed.
    A page may set its own CSP only as :func:`csp_sending_forms_to` makes it: the console's."""

    def __init__(self, inner: ASGIApp) -> None:
        self._inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in _HEADERS}
                given = message.get("headers", [])
                own = [v for k, v in given if k.lower() == b"content-security-policy"]
                headers = [(k, v) for k, v in given if k.lower() not in names]
                ours = _HEADERS
                if len(own) == 1 and own[0].startswith(CSP.partition("form-action")[0].encode()):
                    ours = [(k, own[0] if k == b"content-security-policy" else v) for k, v in _HEADERS]
                message["headers"] = headers + ours
            await send(message)

        await self._inner(scope, receive, with_headers)
