"""Console page: what search learned from the organization's use (R-5.12), and forgetting it.

Per tool it shows how many past searches led to a successful call of it and from how many members
(never a query's text or vector: the page reads ``search__examples``). Forgetting one tool's, or
every tool's, is the same audited act as ``toolcrib search forget`` (``search__forget``), a
CSRF-checked POST.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]


@builder("learned")
async def learned_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    rows = await ctx.op("search__examples")
    return ctx.page(
        "learned.html",
        status=status,
        rows=rows,
        mode=ctx.gw.settings.search_learning,
        error=error_view(error),
    )


async def _forget(ctx: Ctx, form: FormData) -> Response:
    tool = text(form, "tool")
    await ctx.op("search__forget", {"tool": tool} if tool else {})
    return done("learned", "examples_forgotten")


def routes() -> list[Route]:
    return [
        Route("/learned", page("learned")),
        Route("/learned/forget", action("learned", _forget), methods=["POST"]),
    ]
