"""The admin console at ``/admin`` (#13): server-rendered pages over the same gateway functions.

Pages: connections, members and tokens, restrictions, approvals, frozen parameters, audit log,
search playground, savings. Sign-in, sessions and CSRF: :mod:`.session`; dispatch: :mod:`.handlers`.
No script runs inline (the CSP forbids it); the one small script and the style sheet are served
from the package under ``/admin/static``.
"""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Mount, Router
from starlette.staticfiles import StaticFiles

from toolcrib.web.admin import approvals, audit, auth, connections, insight, members, restrictions
from toolcrib.web.admin.session import SecurityHeaders

__all__ = ["STATIC", "admin_mount"]

STATIC = Path(__file__).resolve().parents[1] / "static"


def admin_mount() -> Mount:
    """``/admin`` and everything under it, each answer with the console's security headers."""
    routes = [
        *auth.routes(),
        *connections.routes(),
        *members.routes(),
        *restrictions.routes(),
        *approvals.routes(),
        *audit.routes(),
        *insight.routes(),
        Mount("/static", app=StaticFiles(directory=STATIC), name="admin-static"),
    ]
    return Mount("/admin", app=SecurityHeaders(Router(routes=routes)))
