"""Console sign-in and sign-out with a token (the same tokens as ``/mcp`` and ``/api``)."""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolcrib.errors import Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.web.address_limits import by_address
from toolcrib.web.admin.handlers import Ctx, action
from toolcrib.web.admin.render import first_page, render
from toolcrib.web.admin.session import (
    LOGIN_COOKIE,
    clear_session,
    csrf_ok,
    login_nonce,
    open_session,
    same_origin,
    set_login_nonce,
    set_session,
)
from toolcrib.web.signin import idp_label

__all__ = ["routes"]


async def index(request: Request) -> Response:
    session = await open_session(request, request.app.state.gateway)
    if session is None:
        return RedirectResponse("/admin/login", 303)
    slug = first_page(session.principal)
    if slug is None:
        return Ctx(request, session).page("denied.html", status=403, code="permission_required")
    return RedirectResponse(f"/admin/{slug}", 303)


async def login_page(request: Request) -> Response:
    if await open_session(request, request.app.state.gateway) is not None:
        return RedirectResponse("/admin", 303)
    return _login(request)


def _login(request: Request, *, status: int = 200, code: str | None = None) -> Response:
    """The sign-in form with its double-submit nonce (cookie and hidden field alike)."""
    nonce = login_nonce(request)
    idp = idp_label(request.app.state.gateway.settings)
    response = render(request, "login.html", status=status, code=code, nonce=nonce, idp=idp)
    set_login_nonce(response, request, nonce)
    return response


async def login(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    form: FormData = await request.form()
    if not same_origin(request, gw.settings.allowed_origins) or not csrf_ok(
        request.cookies.get(LOGIN_COOKIE), form.get("nonce")
    ):
        return _login(request, status=403, code="csrf_failed")
    token = form.get("token")
    try:
        await gw.bearers.authenticate(token.strip() if isinstance(token, str) else None)
    except Unauthenticated:
        return _login(request, status=401, code="unauthenticated")
    assert isinstance(token, str)
    response = RedirectResponse("/admin", 303)
    set_session(response, request, gw.store, token.strip())
    response.delete_cookie(LOGIN_COOKIE, path="/admin")
    return response


def _too_many(request: Request, wait: int) -> Response:
    """The sign-in form again, 429: this address tried too often (R-7.10)."""
    return _login(request, status=429, code="rate_limited")


async def _logout(ctx: Ctx, form: FormData) -> Response:
    response = RedirectResponse("/admin/login", 303)
    clear_session(response, ctx.request)
    return response


def routes() -> list[Route]:
    return [
        Route("/", index),
        Route("/login", login_page),
        Route("/login", by_address(login, _too_many), methods=["POST"]),  # per address
        Route("/logout", action("connections", _logout), methods=["POST"]),
    ]
