"""The sign-in session of the ``/auth`` pages (consent, and the identity provider's callback).

The cookie holds the token of a short-lived grant of kind ``session`` (8 h, minted by
:func:`toolcrib.gateway.identity.grants.new_session_grant`), sealed with the gateway's key like the
console's cookie, with a CSRF nonce and the time it was issued. It is ``HttpOnly``,
``SameSite=Lax`` (the person arrives at ``/authorize`` from the client's site, a top-level
navigation), limited to ``/auth`` and ``Secure`` over https. The grant is authenticated again on
every request (R-7.6): revoking it, or suspending its member, ends the session at once. A session
grant is never a bearer token on ``/mcp`` or ``/api`` (``authenticate(..., session=True)`` only).

Whoever signs a person in (the personal-token form here, the OpenID Provider's callback) ends by::

    token = await new_session_grant(gw, member)
    sign_in(response, request, gw, token)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from toolcrib.errors import Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.settings import Settings
from toolcrib.web.cookies import is_secure, open_sealed_session, set_sealed_session

__all__ = [
    "COOKIE",
    "PATH",
    "form_ok",
    "idp_label",
    "login_url",
    "safe_next",
    "session_csrf",
    "sign_in",
    "sign_out",
    "signed_in",
]

COOKIE = "toolcrib_auth"
PATH = "/auth"
MAX_AGE_SECONDS = 8 * 3600


def idp_label(settings: Settings) -> str | None:
    """The organization's identity provider as the sign-in buttons name it (R-7.8), when one is
    set: ``oidc_label``, else the issuer's host name."""
    issuer = settings.oidc_issuer
    if not issuer:
        return None
    return settings.oidc_label or urlsplit(issuer).hostname or issuer


def sign_in(response: Response, request: Request, storage: Storage, token: str) -> None:
    """Set the sign-in cookie holding ``token`` (a session grant's token), sealed."""
    set_sealed_session(
        response,
        request,
        storage,
        name=COOKIE,
        path=PATH,
        max_age=MAX_AGE_SECONDS,
        samesite="lax",
        data={"token": token},
    )


def sign_out(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path=PATH, secure=is_secure(request), httponly=True, samesite="lax")


def _opened(request: Request, storage: Storage) -> dict[str, Any] | None:
    return open_sealed_session(request, storage, name=COOKIE, max_age=MAX_AGE_SECONDS)


async def signed_in(request: Request, gw: Gateway) -> Principal | None:
    """Who is signed in to the ``/auth`` pages, authenticated again now; None when nobody is."""
    data = _opened(request, gw.store)
    if data is None:
        return None
    try:
        return await gw.bearers.authenticate(str(data["token"]), session=True)
    except Unauthenticated:
        return None


def session_csrf(request: Request, storage: Storage) -> str | None:
    """The session's CSRF nonce, which every form of the ``/auth`` pages posts back."""
    data = _opened(request, storage)
    return str(data["csrf"]) if data is not None else None


def form_ok(request: Request, gw: Gateway, posted: object) -> bool:
    """A POST of an ``/auth`` page: from this gateway, carrying the session's CSRF token."""
    from toolcrib.web.admin.session import csrf_ok, same_origin

    return same_origin(request, gw.settings.allowed_origins) and csrf_ok(
        session_csrf(request, gw.store), posted
    )


def safe_next(next_path: str | None, default: str = "/auth/grants") -> str:
    """``next_path`` when it is a local path of this gateway, else ``default``: no open redirect."""
    if not next_path or not next_path.startswith("/") or next_path.startswith(("//", "/\\")):
        return default
    parts = urlsplit(next_path)
    if parts.scheme or parts.netloc or any(c in next_path for c in "\r\n\\"):
        return default
    return next_path


def login_url(next_path: str) -> str:
    """``/auth/login?next=…``; ``next`` is kept only when it is a local path."""
    return "/auth/login?next=" + quote(safe_next(next_path), safe="")
