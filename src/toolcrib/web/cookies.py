"""The gateway's browser cookies: when they are ``Secure``, and a sealed session cookie.

One answer to "is this browser on https": reached over https, or through a trusted proxy that ended
TLS (``web.proxies`` rewrites the scheme only for one listed in ``trusted_proxies``), or a public
``https://`` URL. Every cookie the gateway sets (the console's session and sign-in nonce, the
``/auth`` sign-in, the identity provider's pending sign-in, an upstream authorization's browser
binding) takes its ``Secure`` flag from :func:`is_secure`.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import Response

from toolcrib.errors import ConfigError
from toolcrib.gateway.storage import Storage

__all__ = ["is_secure", "open_sealed_session", "set_sealed_session"]


def is_secure(request: Request) -> bool:
    """Whether the browser reaches this gateway over https (so its cookies are ``Secure``)."""
    public = request.app.state.gateway.settings.public_url or ""
    return request.url.scheme == "https" or public.startswith("https://")


def set_sealed_session(
    response: Response,
    request: Request,
    storage: Storage,
    *,
    name: str,
    path: str,
    max_age: int,
    samesite: Literal["lax", "strict"],
    data: dict[str, Any],
) -> None:
    """A session cookie: ``data`` with a fresh CSRF nonce and the time it was issued, sealed with
    the gateway's key (encrypted and authenticated), ``HttpOnly``, limited to ``path``."""
    sealed = storage.box.seal({**data, "csrf": secrets.token_urlsafe(24), "iat": storage.clock()})
    response.set_cookie(
        name, sealed, max_age=max_age, path=path, secure=is_secure(request), httponly=True, samesite=samesite
    )


def open_sealed_session(
    request: Request, storage: Storage, *, name: str, max_age: int
) -> dict[str, Any] | None:
    """What :func:`set_sealed_session` sealed in cookie ``name``, or None: no cookie, one tampered
    with or sealed under another key, one without its token, nonce and time, or one too old."""
    sealed = request.cookies.get(name)
    if not sealed:
        return None
    try:
        data = storage.box.open(sealed)
    except ConfigError:  # tampered with, or sealed under another key
        return None
    if not isinstance(data, dict) or not {"token", "csrf", "iat"} <= data.keys():
        return None
    iat = data["iat"]
    if not isinstance(iat, int | float) or storage.clock() - iat > max_age:
        return None
    return data
