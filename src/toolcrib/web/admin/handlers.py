"""How a console request is handled: signed in, allowed, CSRF-checked, dispatched, answered.

Reads and actions go through the same ``ControlPlane`` dispatch as the MCP and REST faces
(``control.call``, with the operation's permission and scope checks and its ``inputSchema``), or
through the gateway function the CLI calls where there is no control-plane operation. A refused or
failed action shows its in-band code (R-3.3) on the page it came from, with the REST face's status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from toolcrib.errors import InBandError
from toolcrib.gateway.control import ControlPlane
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.faults import in_band
from toolcrib.policy.gates import Principal
from toolcrib.web.admin.render import allowed, render, require_page
from toolcrib.web.admin.session import Session, csrf_ok, open_session, same_origin
from toolcrib.web.rest import status_for

__all__ = ["DONE", "Ctx", "action", "builder", "done", "error_view", "failed", "page", "text"]

LOGIN = "/admin/login"

DONE: dict[str, str] = {
    "connection_created": "Connection added.",
    "connection_refreshed": "Connection refreshed.",
    "connection_deleted": "Connection removed.",
    "member_invited": "Member added.",
    "member_suspended": "Member suspended.",
    "member_reactivated": "Member reactivated.",
    "member_role": "Role changed.",
    "grant_revoked": "Token revoked.",
    "own_grant_revoked": "Grant revoked: its next call is refused.",
    "rule_created": "Restriction added.",
    "rule_deleted": "Restriction removed.",
    "approval_approved": "Approved: the same call by the same member now runs once.",
    "approval_declined": "Declined: the call does not run.",
    "frozen_set": "Parameter frozen.",
    "frozen_unset": "Parameter unfrozen.",
    "change_accepted": "Change accepted: the tool is searchable and runs again.",
    "change_rejected": "Change rejected: the tool stays held until its server offers another definition.",
    "limit_set": "Limit set.",
    "limit_removed": "Limit removed.",
    "examples_forgotten": "Forgotten: search no longer reads those past searches.",
}
"""The notices a redirect after an action may name (a fixed set: no text of the URL is shown)."""


@dataclass(frozen=True, slots=True)
class Ctx:
    request: Request
    session: Session

    @property
    def principal(self) -> Principal:
        return self.session.principal

    @property
    def gw(self) -> Gateway:
        gw: Gateway = self.request.app.state.gateway
        return gw

    async def op(self, key: str, arguments: dict[str, Any] | None = None) -> Any:
        """Run control-plane operation ``resource__operation`` as the signed-in member (REST rules)."""
        control: ControlPlane = self.request.app.state.control
        name = f"{self.gw.settings.control_prefix}__{key}"
        answer = await control.call(self.principal, name, arguments or {}, over_mcp=False)
        return answer["result"]

    def page(self, template: str, *, status: int = 200, **context: Any) -> Response:
        done = DONE.get(self.request.query_params.get("done", ""))
        context.setdefault("notice", done)
        return render(
            self.request, template, principal=self.principal, csrf=self.session.csrf, status=status, **context
        )


Builder = Callable[..., Awaitable[Response]]
_BUILDERS: dict[str, Builder] = {}


def builder(slug: str) -> Callable[[Builder], Builder]:
    """Register the function that draws page ``slug`` (also with an action's error on it)."""

    def register(fn: Builder) -> Builder:
        _BUILDERS[slug] = fn
        return fn

    return register


async def _session_or_none(request: Request) -> Session | None:
    return await open_session(request, request.app.state.gateway)


def page(slug: str) -> Callable[[Request], Awaitable[Response]]:
    """The GET endpoint of page ``slug``."""

    async def endpoint(request: Request) -> Response:
        session = await _session_or_none(request)
        if session is None:
            return RedirectResponse(LOGIN, 303)
        ctx = Ctx(request, session)
        try:
            require_page(session.principal, slug)  # the role's permission and the grant's scope
            return await _BUILDERS[slug](ctx)
        except Exception as exc:  # e.g. a grant short of the scope a read needs: its code, no trace
            return failed(ctx, in_band(exc))

    return endpoint


Action = Callable[[Ctx, FormData], Awaitable[Response]]


def action(slug: str, fn: Action) -> Callable[[Request], Awaitable[Response]]:
    """A POST endpoint: signed in, same origin, the session's CSRF token; errors shown on ``slug``."""

    async def endpoint(request: Request) -> Response:
        session = await _session_or_none(request)
        if session is None:
            return RedirectResponse(LOGIN, 303)
        ctx = Ctx(request, session)
        form = await request.form()
        if not same_origin(request, ctx.gw.settings.allowed_origins) or not csrf_ok(
            session.csrf, form.get("csrf")
        ):
            return ctx.page("denied.html", status=403, code="csrf_failed")
        try:
            return await fn(ctx, form)
        except Exception as exc:
            error = in_band(exc)
        if not allowed(session.principal, slug):
            return failed(ctx, error)
        try:
            return await _BUILDERS[slug](ctx, error=error, status=status_for(error.code))
        except Exception as exc:
            return failed(ctx, in_band(exc))

    return endpoint


def failed(ctx: Ctx, error: InBandError) -> Response:
    """A page that could not be drawn or an action refused off its page: the in-band code alone."""
    return ctx.page("denied.html", status=status_for(error.code), code=error.code, error=error_view(error))


def done(slug: str, what: str) -> Response:
    return RedirectResponse(f"/admin/{slug}?done={what}", 303)


def text(form: FormData, name: str) -> str | None:
    """A form field, stripped; ``None`` when blank or absent (the operation's optional argument)."""
    value = form.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


def error_view(error: InBandError | None) -> dict[str, Any] | None:
    return None if error is None else error.to_payload()["error"]
