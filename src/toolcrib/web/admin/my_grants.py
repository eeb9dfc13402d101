"""Console page "My grants" (R-7.9): every signed-in member's own grants, whatever their role.

Each grant shows its kind, client (for an OAuth grant), scopes, creation and last use, and can be
revoked; the page calls the same gateway functions as ``toolcrib grants`` and the control plane.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.gateway.identity import grants
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]


@builder("grants")
async def grants_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    mine = await grants.list_grants(ctx.gw.store, ctx.principal, ctx.principal.member)
    return ctx.page("grants.html", status=status, grants=mine, error=error_view(error))


async def _revoke(ctx: Ctx, form: FormData) -> Response:
    await grants.revoke_grant(ctx.gw.store, ctx.principal, text(form, "id") or "")
    return done("grants", "own_grant_revoked")


def routes() -> list[Route]:
    return [
        Route("/grants", page("grants")),
        Route("/grants/revoke", action("grants", _revoke), methods=["POST"]),
    ]
