"""Console pages: the search playground and the savings chart.

The playground runs ``search_tools`` as a chosen member (``gateway.discovery.playground.search_as``) and
shows the exact answer the model would get, its size in bytes against a flat listing, and why each
``restricted`` tool is withheld; named, a tool missing from the cards is diagnosed as that member
(``tools__diagnose``: the first check it fails). It is a POST (it issues that member's handles), CSRF-checked.

The chart draws the model-facing bytes (``tools/list`` and search answers) against what flat
listings of the same callers' catalogs would have cost, summed since the gateway started, from the
telemetry the ``/metrics`` counters come from. It is an SVG drawn here, no script.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError, InvalidArguments
from toolcrib.gateway.discovery.playground import search_as, why_not
from toolcrib.gateway.identity import members
from toolcrib.policy.roles import has_permission
from toolcrib.web.admin.handlers import Ctx, action, builder, error_view, page, text
from toolcrib.web.telemetry import Telemetry

__all__ = ["chart", "routes"]

WIDTH, HEIGHT, PAD = 640, 240, 44


@builder("playground")
async def playground_page(
    ctx: Ctx,
    *,
    error: InBandError | None = None,
    status: int = 200,
    asked: dict[str, Any] | None = None,
    found: dict[str, Any] | None = None,
) -> Response:
    others = has_permission(ctx.principal.role, "members:read") and has_permission(
        ctx.principal.role, "restrictions:read"
    )
    names = (
        [m.name for m in await members.list_members(ctx.gw.store, ctx.principal)]
        if others
        else [ctx.principal.member]
    )
    return ctx.page(
        "playground.html",
        status=status,
        member_names=names,
        asked=asked or {"member": ctx.principal.member, "query": "", "limit": 3, "tool": ""},
        found=found,
        error=error_view(error),
    )


async def _search(ctx: Ctx, form: FormData) -> Response:
    limit_text = text(form, "limit") or "3"
    member = text(form, "member") or ctx.principal.member
    query = text(form, "query") or ""
    limit = int(limit_text) if limit_text.isdigit() and len(limit_text) < 3 else 3
    if not query:
        raise InvalidArguments("`query` is blank", [{"pointer": "/query", "message": "blank"}])
    asked = {"member": member, "query": query, "limit": limit, "tool": text(form, "tool") or ""}
    found = await search_as(ctx.gw, ctx.principal, member, query, limit)
    if asked["tool"]:
        found["diagnosis"] = await why_not(ctx.gw, ctx.principal, member, str(asked["tool"]))
    return await playground_page(ctx, asked=asked, found=found)


def chart(points: list[tuple[float, int, int]]) -> dict[str, Any] | None:
    """Polyline coordinates of the two series (model-facing, flat), scaled into the drawing."""
    if not points:
        return None
    if len(points) == 1:  # one moment: drawn from nothing a minute before it
        points = [(points[0][0] - 60, 0, 0), *points]
    t0, t1 = points[0][0], points[-1][0]
    top = max(max(p[1], p[2]) for p in points) or 1
    span = (t1 - t0) or 1.0
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def xy(t: float, value: int) -> str:
        return f"{PAD + (t - t0) / span * inner_w:.1f},{HEIGHT - PAD - value / top * inner_h:.1f}"

    last = points[-1]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "pad": PAD,
        "model": " ".join(xy(t, s) for t, s, _ in points),
        "flat": " ".join(xy(t, f) for t, _, f in points),
        "top": top,
        "start": points[0][0],
        "end": last[0],
        "model_bytes": last[1],
        "flat_bytes": last[2],
        "saved": 1 - last[1] / last[2] if last[2] else None,
    }


@builder("savings")
async def savings_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    telemetry: Telemetry = ctx.request.app.state.telemetry
    return ctx.page("savings.html", status=status, chart=chart(telemetry.savings.points()))


def routes() -> list[Route]:
    return [
        Route("/playground", page("playground")),
        Route("/playground", action("playground", _search), methods=["POST"]),
        Route("/savings", page("savings")),
    ]
