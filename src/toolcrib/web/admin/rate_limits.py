"""Console page: rate limits (R-7.10): the rules in words, add one, remove one.

Reads and changes go through the control-plane operations ``limits__list``, ``limits__set`` and
``limits__remove``, with their permission and scope checks and their ``inputSchema``.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError, InvalidArguments
from toolcrib.policy.roles import ROLES, has_permission
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]

_NAMES = ("member", "role", "account", "tool")
_COUNTS = ("per_minute", "per_day")


@builder("limits")
async def limits_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    rules = await ctx.op("limits__list")
    return ctx.page(
        "limits.html",
        status=status,
        rules=rules,
        roles=ROLES,
        accounts=sorted(ctx.gw.catalog.connections),
        can_write=has_permission(ctx.principal.role, "restrictions:write"),
        error=error_view(error),
    )


def _count(form: FormData, name: str) -> int | None:
    value = text(form, name)
    if value is None:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 12:
        raise InvalidArguments(
            f"{name} must be a whole number", [{"pointer": f"/{name}", "message": "not a number"}]
        )
    return int(value)


async def _create(ctx: Ctx, form: FormData) -> Response:
    args: dict[str, object] = {name: value for name in _NAMES if (value := text(form, name)) is not None}
    if text(form, "target_kind") == "member":  # one field names the member or the role
        args.pop("role", None)
    else:
        args.pop("member", None)
    args.update({name: n for name in _COUNTS if (n := _count(form, name)) is not None})
    await ctx.op("limits__set", args)
    return done("limits", "limit_set")


async def _delete(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("limits__remove", {"id": text(form, "id") or ""})
    return done("limits", "limit_removed")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/limits", page("limits")),
        Route("/limits/create", action("limits", _create), methods=post),
        Route("/limits/delete", action("limits", _delete), methods=post),
    ]
