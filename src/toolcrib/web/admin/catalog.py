"""Console page: Add from catalog (R-13.9): search the MCP registries, and add an entry as a
connection with the inputs it asks for (secret ones in password fields, sealed once added).

Both go through the control-plane operations every face uses: ``connectors__search`` and
``connections__create`` with ``from_registry`` and ``inputs``.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text
from toolcrib.web.rest import status_for

__all__ = ["routes"]

_INPUT = "input."
_MAX_QUERY = 200


@builder("catalog")
async def catalog_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    query = (ctx.request.query_params.get("q") or "").strip()[:_MAX_QUERY]
    found: dict[str, Any] | None = None
    if query and error is None:
        try:
            found = await ctx.op("connectors__search", {"words": query})
        except InBandError as exc:  # the registry could not be read: said on the page
            error, status = exc, status_for(exc.code)
    return ctx.page(
        "catalog.html",
        status=status,
        query=query,
        found=found,
        stdio_allowed=ctx.gw.settings.allow_remote_stdio,
        error=error_view(error),
    )


async def _add(ctx: Ctx, form: FormData) -> Response:
    inputs = [
        f"{key.removeprefix(_INPUT)}={value}"
        for key, value in form.multi_items()
        if key.startswith(_INPUT) and isinstance(value, str) and value != ""
    ]
    args: dict[str, Any] = {
        "name": text(form, "name") or "",
        "from_registry": text(form, "from_registry") or "",
    }
    if inputs:
        args["inputs"] = inputs
    await ctx.op("connections__create", args)
    return done("connections", "connection_created")


def routes() -> list[Route]:
    return [
        Route("/catalog", page("catalog")),
        Route("/catalog/add", action("catalog", _add), methods=["POST"]),
    ]
