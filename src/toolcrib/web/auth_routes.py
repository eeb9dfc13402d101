"""The ``/auth`` pages' routes, their modules (and Jinja2) imported at their first request.

A gateway whose sign-in pages nobody opens never imports them: like the console, they stay off
every start-up (#12). The import runs in a worker thread, so the first request does not hold up
the event loop.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["auth_routes"]

_PAGES = (
    ("/auth/login", "GET", "auth_pages", "login_page"),
    ("/auth/login", "POST", "auth_pages", "login"),
    ("/auth/consent", "GET", "consent", "consent_page"),
    ("/auth/consent", "POST", "consent", "consent"),
    ("/auth/grants", "GET", "my_grants", "my_grants"),
    ("/auth/grants/revoke", "POST", "my_grants", "revoke"),
)


def _lazy(module: str, name: str) -> Callable[[Request], Awaitable[Response]]:
    loaded: list[Any] = []

    async def endpoint(request: Request) -> Response:
        if not loaded:
            found = await anyio.to_thread.run_sync(importlib.import_module, f"toolcrib.web.{module}")
            loaded.append(getattr(found, name))
        answer: Response = await loaded[0](request)
        return answer

    return endpoint


def auth_routes() -> list[Route]:
    return [Route(path, _lazy(module, name), methods=[method]) for path, method, module, name in _PAGES]
