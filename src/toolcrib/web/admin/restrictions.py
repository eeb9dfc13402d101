"""Console page: restrictions (add, remove) and "explain" for a member or role and a tool (R-8.6)."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.gateway.discovery import tools
from toolcrib.gateway.faults import in_band
from toolcrib.policy.roles import ROLES, has_permission
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]

_RULE_FIELDS = ("effect", "target_kind", "target", "connector", "account", "tool")


async def _explained(ctx: Ctx) -> tuple[dict[str, Any] | None, InBandError | None]:
    """The explain form's answer, when it was asked (a GET: it changes nothing)."""
    query = ctx.request.query_params
    tool = (query.get("tool") or "").strip()
    if not tool:
        return None, None
    who = (query.get("who") or "").strip()
    kind = "role" if query.get("kind") == "role" else "user"
    args = {"tool": tool, kind: who} if who else {"tool": tool}
    try:
        lines = await ctx.op("restrictions__explain", args)
    except Exception as exc:
        return None, in_band(exc)
    return {"tool": tool, "who": who, "kind": kind, "lines": lines}, None


@builder("restrictions")
async def restrictions_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    rules = await ctx.op("restrictions__list")
    explained, explain_error = await _explained(ctx)
    names = [t["name"] for t in await tools.list_tools(ctx.gw, ctx.principal)]
    return ctx.page(
        "restrictions.html",
        status=status,
        rules=rules,
        roles=ROLES,
        tool_names=names,
        explained=explained,
        explain_error=error_view(explain_error),
        can_write=has_permission(ctx.principal.role, "restrictions:write"),
        error=error_view(error),
    )


async def _create(ctx: Ctx, form: FormData) -> Response:
    args = {name: value for name in _RULE_FIELDS if (value := text(form, name)) is not None}
    await ctx.op("restrictions__create", args)
    return done("restrictions", "rule_created")


async def _delete(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("restrictions__delete", {"id": text(form, "id") or ""})
    return done("restrictions", "rule_deleted")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/restrictions", page("restrictions")),
        Route("/restrictions/create", action("restrictions", _create), methods=post),
        Route("/restrictions/delete", action("restrictions", _delete), methods=post),
    ]
