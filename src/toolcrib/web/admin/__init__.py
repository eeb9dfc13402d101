"""The admin console at ``/admin`` (#13): server-rendered pages over the same gateway functions.

Pages: connections, members and tokens, restrictions, approvals, rate limits, frozen parameters,
changed tools, learned searches, audit log, search playground, savings. Sign-in, sessions and
CSRF: :mod:`.session`; dispatch: :mod:`.handlers`.
No script runs inline (the CSP forbids it); the one small script and the style sheet are served
from the package under ``/admin/static``.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from starlette.routing import Mount, Router
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["STATIC", "admin_mount"]

STATIC = Path(__file__).resolve().parents[1] / "static"


def admin_mount() -> Mount:
    """``/admin`` and everything under it, each answer with the console's security headers."""
    return Mount("/admin", app=_Console())


class _Console:
    """The console, built at its first request: a gateway whose console nobody opens never
    imports its pages and Jinja2 (~0.1 s of every start-up, #12). The build runs in a worker
    thread, so that first request does not hold up the event loop."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            built = await anyio.to_thread.run_sync(_console)
            self._app = self._app or built
        await self._app(scope, receive, send)


def _console() -> ASGIApp:
    from toolcrib.web.admin import (
        approvals,
        audit,
        auth,
        catalog,
        changes,
        connections,
        insight,
        learned,
        members,
        my_grants,
        oauth_start,
        rate_limits,
        restrictions,
    )
    from toolcrib.web.admin.session import SecurityHeaders

    routes = [
        *auth.routes(),
        *connections.routes(),
        *catalog.routes(),
        *changes.routes(),
        *learned.routes(),
        *members.routes(),
        *my_grants.routes(),
        *restrictions.routes(),
        *approvals.routes(),
        *rate_limits.routes(),
        *audit.routes(),
        *insight.routes(),
        *oauth_start.routes(),
        Mount("/static", app=StaticFiles(directory=STATIC), name="admin-static"),
    ]
    return SecurityHeaders(Router(routes=routes))
