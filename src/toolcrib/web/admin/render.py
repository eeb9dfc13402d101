"""Templates of the console: Jinja2 with autoescaping on for every template, and its navigation.

Each page names the permission it needs (R-7.1); the navigation shows only the pages the signed-in
member's role holds, and a page asked for without it answers 403.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.requests import Request
from starlette.responses import HTMLResponse

from toolcrib.policy.gates import Principal, permitted, require

__all__ = ["NAV", "NavItem", "allowed", "first_page", "render", "require_page"]


@dataclass(frozen=True, slots=True)
class NavItem:
    slug: str
    title: str
    permission: str


NAV: tuple[NavItem, ...] = (
    NavItem("connections", "Connections", "connections:read"),
    NavItem("catalog", "Add from catalog", "connections:write"),  # MCP registries
    NavItem("members", "Members and tokens", "members:read"),
    NavItem("restrictions", "Restrictions", "restrictions:read"),
    NavItem("approvals", "Approvals", "restrictions:write"),  # who may approve (approvals__approve)
    NavItem("limits", "Limits", "restrictions:read"),
    NavItem("frozen", "Frozen parameters", "connections:write"),
    NavItem("changes", "Changes", "connections:write"),  # held tool changes
    NavItem("learned", "Learned searches", "connections:write"),  # search's examples
    NavItem("audit", "Audit log", "audit:read"),
    NavItem("playground", "Search playground", "tool:execute"),
    NavItem("savings", "Savings", "usage:read"),
    NavItem("grants", "My grants", ""),  # every signed-in member: their own grants
)
_BY_SLUG = {item.slug: item for item in NAV}


def allowed(principal: Principal, slug: str) -> bool:
    """Whether the page shows for ``principal``: the one authorization check of every face, the
    role's permission and the grant's scope both (a token without ``mcp:read`` reads no page). A
    page that names no permission (the member's own grants) is every signed-in member's."""
    permission = _BY_SLUG[slug].permission
    return not permission or permitted(principal, permission, "read")


def require_page(principal: Principal, slug: str) -> None:
    """:func:`allowed`, raising the in-band error that says why not (the role, or the scope)."""
    permission = _BY_SLUG[slug].permission
    if permission:
        require(principal, permission, "read")


def first_page(principal: Principal) -> str | None:
    return next((item.slug for item in NAV if allowed(principal, item.slug)), None)


def _iso(value: object) -> str:
    """A Unix time as ISO 8601 (UTC, seconds); anything else as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    return "" if value is None else str(value)


def _size(value: object) -> str:
    """A byte count the way people read it: ``950 B``, ``12.4 kB``, ``3.1 MB``."""
    if not isinstance(value, int | float):
        return str(value)
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _web_link(value: object) -> str:
    """``value`` when it is an http(s) URL, else empty: an upstream's authorization server names
    the authorize link, and a ``javascript:`` or ``data:`` link must never become a button."""
    text = value if isinstance(value, str) else ""
    return text if text.lower().startswith(("https://", "http://")) else ""


def _as_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)


_ENV = Environment(loader=PackageLoader("toolcrib.web", "templates"), autoescape=True)
_ENV.filters["iso"] = _iso
_ENV.filters["as_json"] = _as_json
_ENV.filters["size"] = _size
_ENV.filters["web_link"] = _web_link


def render(
    request: Request,
    template: str,
    *,
    principal: Principal | None = None,
    csrf: str | None = None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """One page; ``principal`` (when signed in) decides the navigation it shows."""
    nav = [item for item in NAV if principal is not None and allowed(principal, item.slug)]
    html = _ENV.get_template("admin/" + template).render(
        nav=nav, me=principal, csrf=csrf, path=request.url.path, **context
    )
    return HTMLResponse(html, status)
