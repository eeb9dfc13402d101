"""Console page: members and their tokens (invite, role, suspend, reactivate; create, revoke).

A new token is shown once, on the answer to the form that created it, and never again: only its
hash is stored (R-7.5), and it is never put in a URL.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.gateway.identity import members
from toolcrib.policy.roles import ROLES, has_permission
from toolcrib.policy.scopes import SCOPES
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]


@builder("members")
async def members_page(
    ctx: Ctx, *, error: InBandError | None = None, status: int = 200, new_token: dict[str, Any] | None = None
) -> Response:
    people = await ctx.op("members__list")
    grants = await ctx.op("grants__list")
    by_member: dict[str, list[dict[str, Any]]] = {}
    for grant in grants:
        by_member.setdefault(grant["member"], []).append(grant)
    return ctx.page(
        "members.html",
        status=status,
        people=people,
        grants=by_member,
        roles=ROLES,
        scopes=sorted(SCOPES),
        default_scopes=members.DEFAULT_SCOPES.split(),
        can_write=has_permission(ctx.principal.role, "members:write"),
        new_token=new_token,
        error=error_view(error),
    )


async def _invite(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("members__invite", {"name": text(form, "name") or "", "role": text(form, "role") or ""})
    return done("members", "member_invited")


async def _role(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("members__update_role", {"name": text(form, "name") or "", "role": text(form, "role") or ""})
    return done("members", "member_role")


async def _suspend(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("members__suspend", {"name": text(form, "name") or ""})
    return done("members", "member_suspended")


async def _reactivate(ctx: Ctx, form: FormData) -> Response:
    await members.reactivate_member(ctx.gw.store, text(form, "name") or "", ctx.principal)
    return done("members", "member_reactivated")


async def _create_token(ctx: Ctx, form: FormData) -> Response:
    member = text(form, "member") or ""
    scopes = " ".join(s for s in form.getlist("scopes") if isinstance(s, str))
    created = await ctx.op("grants__create", {"member": member, "scopes": scopes})
    return await members_page(ctx, new_token={"member": member, **created})


async def _revoke(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("grants__revoke", {"id": text(form, "id") or ""})
    return done("members", "grant_revoked")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/members", page("members")),
        Route("/members/invite", action("members", _invite), methods=post),
        Route("/members/role", action("members", _role), methods=post),
        Route("/members/suspend", action("members", _suspend), methods=post),
        Route("/members/reactivate", action("members", _reactivate), methods=post),
        Route("/tokens/create", action("members", _create_token), methods=post),
        Route("/tokens/revoke", action("members", _revoke), methods=post),
    ]
