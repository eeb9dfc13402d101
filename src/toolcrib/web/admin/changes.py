"""Console page: tools held because their server changed them (R-13.4), each with its diff.

The diff is the same text ``toolcrib tools changes`` prints, shown escaped in a ``<pre>``: a
changed description is exactly the text an attacker wrote, so it is never markup here. Accepting
posts the digest of the definition the page showed: if the server offered yet another one
meanwhile, the accept is refused and the page shows the new difference.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]


@builder("changes")
async def changes_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    changes = await ctx.op("tools__changes")
    return ctx.page("changes.html", status=status, changes=changes, error=error_view(error))


def _target(form: FormData) -> dict[str, str]:
    return {"account": text(form, "account") or "", "tool": text(form, "tool") or ""}


async def _accept(ctx: Ctx, form: FormData) -> Response:
    args = _target(form)
    sha256 = text(form, "sha256")
    await ctx.op("tools__accept", {**args, "sha256": sha256} if sha256 else args)
    return done("changes", "change_accepted")


async def _reject(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("tools__reject", _target(form))
    return done("changes", "change_rejected")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/changes", page("changes")),
        Route("/changes/accept", action("changes", _accept), methods=post),
        Route("/changes/reject", action("changes", _reject), methods=post),
    ]
