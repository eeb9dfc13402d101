"""STAND-IN (wt/oidc, #22): the sign-in session of toolcrib's own authorization server.

The real module comes from branch wt/authserver, which owns the ``/auth`` sign-in session and
``/auth/login``; the merge replaces this file. Only these three signatures are relied upon by
``web/oidc.py``: ``signed_in``, ``sign_in`` and ``login_url``.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from toolcrib.errors import ConfigError, Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import authenticate
from toolcrib.policy.gates import Principal

__all__ = ["COOKIE", "login_url", "sign_in", "signed_in"]

COOKIE = "toolcrib_signin"
_MAX_AGE = 8 * 3600


async def signed_in(request: Request, gw: Gateway) -> Principal | None:
    """The person signed in at ``/auth``, or None."""
    try:
        data = gw.box.open(request.cookies.get(COOKIE))
    except ConfigError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str):
        return None
    try:
        return await authenticate(gw, data["token"])
    except Unauthenticated:
        return None


def sign_in(response: Response, request: Request, gw: Gateway, token: str) -> None:
    """Set the ``/auth`` sign-in cookie holding a grant token."""
    secure = request.url.scheme == "https" or (gw.settings.public_url or "").startswith("https://")
    response.set_cookie(
        COOKIE, gw.box.seal({"token": token}), max_age=_MAX_AGE, path="/auth", secure=secure,
        httponly=True, samesite="lax",
    )  # fmt: skip


def login_url(next_path: str) -> str:
    return "/auth/login?next=" + quote(next_path, safe="/")
