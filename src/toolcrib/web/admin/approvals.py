"""Console pages: the approvals waiting for an answer, and one approval's page (#14).

``/admin/approvals/<id>`` is the link a held call answers with (``approval_url``): who asked, the
exact tool, its account and classification, when the approval expires and the call's exact
arguments, with Approve and Decline buttons: Approve runs the control-plane operation
``approvals__approve``, Decline the gateway function the command line's ``approvals decline``
calls (no MCP tool: R-10.2 bounds the owner's listing). Only who may approve
(``restrictions:write``) sees these pages; the arguments are shown escaped and cut at
:data:`ARGUMENTS_SHOWN_BYTES`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolcrib.errors import InBandError
from toolcrib.gateway.governance import approvals
from toolcrib.web.admin.handlers import Ctx, action, builder, error_view, page

__all__ = ["ARGUMENTS_SHOWN_BYTES", "routes"]

ARGUMENTS_SHOWN_BYTES = 16_000
"""The page shows this much of the arguments (pretty JSON) at most; the rest is named, not shown."""


def shown_arguments(arguments: Any) -> dict[str, Any] | None:
    """The arguments as pretty JSON, cut at :data:`ARGUMENTS_SHOWN_BYTES`; None when not kept."""
    if arguments is None:
        return None
    data = json.dumps(arguments, ensure_ascii=False, indent=2).encode()
    cut = len(data) > ARGUMENTS_SHOWN_BYTES
    text = data[:ARGUMENTS_SHOWN_BYTES].decode(errors="ignore") if cut else data.decode()
    return {"text": text, "bytes": len(data), "cut": cut, "limit": ARGUMENTS_SHOWN_BYTES}


@builder("approvals")
async def approvals_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    approval_id = ctx.request.path_params.get("approval_id")
    if approval_id is None:
        rows = await approvals.pending_approvals(ctx.gw, ctx.principal)
        limit = approvals.PENDING_LISTED
        return ctx.page("approvals.html", status=status, rows=rows, limit=limit, error=error_view(error))
    details = await approvals.approval_details(ctx.gw, approval_id, ctx.principal)
    return ctx.page(
        "approval.html",
        status=status,
        a=details,
        arguments=shown_arguments(details["arguments"]),
        error=error_view(error),
    )


def _answered(approval_id: str, what: str) -> Response:
    return RedirectResponse(f"/admin/approvals/{quote(approval_id, safe='')}?done={what}", 303)


async def _approve(ctx: Ctx, form: FormData) -> Response:
    approval_id = ctx.request.path_params["approval_id"]
    await ctx.op("approvals__approve", {"id": approval_id})
    return _answered(approval_id, "approval_approved")


async def _decline(ctx: Ctx, form: FormData) -> Response:
    approval_id = ctx.request.path_params["approval_id"]
    await approvals.decline(ctx.gw.store, approval_id, ctx.principal)
    return _answered(approval_id, "approval_declined")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/approvals", page("approvals")),
        Route("/approvals/{approval_id}", page("approvals")),
        Route("/approvals/{approval_id}/approve", action("approvals", _approve), methods=post),
        Route("/approvals/{approval_id}/decline", action("approvals", _decline), methods=post),
    ]
