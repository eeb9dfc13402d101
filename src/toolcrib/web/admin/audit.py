"""Console page: the audit log (R-11.3) with filters, pages, and CSV and JSON exports.

Rows come from ``gateway.audit.entries.search_audit``, the function behind ``audit__search``, with its
``audit:read`` check. A page reads at most ``MAX_ROWS`` rows, an export at most ``EXPORT_ROWS``.
A CSV cell that a spreadsheet would run as a formula is prefixed with ``'``.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolcrib.errors import InBandError, InvalidArguments
from toolcrib.gateway.audit.entries import AuditFilter, search_audit
from toolcrib.gateway.audit.stream import stream_state
from toolcrib.web.admin.handlers import Ctx, builder, error_view, page
from toolcrib.web.admin.render import allowed
from toolcrib.web.admin.session import open_session
from toolcrib.web.rest import status_for

__all__ = ["routes"]

PAGE_SIZE = 50
MAX_ROWS = 5_000
EXPORT_ROWS = 10_000
COLUMNS = (
    "id", "member", "grant_id", "account", "connector", "operation", "classification", "approved",
    "target_id", "started_at", "finished_at", "duration_ms", "outcome", "error_code", "instance",
)  # fmt: skip
_FILTERS = ("member", "account", "operation", "outcome", "since", "until")


def _time(value: str, field: str) -> float:
    """``2026-12-01`` or ``2026-12-01T02:30`` (UTC unless it says) as Unix seconds."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidArguments(
            f"`{field}` must be an ISO 8601 date or time", [{"pointer": f"/{field}", "message": "not a date"}]
        ) from exc
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _filter(request: Request, limit: int) -> tuple[AuditFilter, dict[str, str]]:
    given = {k: v.strip() for k in _FILTERS if (v := request.query_params.get(k, "")).strip()}
    times = {k: _time(given[k], k) for k in ("since", "until") if k in given}
    f = AuditFilter(
        member=given.get("member"),
        account=given.get("account"),
        operation=given.get("operation"),
        outcome=given.get("outcome"),
        since=times.get("since"),
        until=times.get("until"),
        limit=limit,
    )
    return f, given


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    return max(1, min(int(raw) if raw.isdigit() and len(raw) < 6 else 1, MAX_ROWS // PAGE_SIZE))


@builder("audit")
async def audit_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    number = _page_number(ctx.request)
    rows: list[dict[str, Any]] = []
    given: dict[str, str] = {}
    more = False
    stream: list[dict[str, Any]] = []
    try:
        f, given = _filter(ctx.request, number * PAGE_SIZE + 1)
        found = await search_audit(ctx.gw.store, ctx.principal, f)
        rows = found[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
        more = len(found) > number * PAGE_SIZE
        stream = await stream_state(ctx.gw, ctx.principal)  # the audit stream's sinks
    except InBandError as exc:  # a filter that is not a date, or a grant short of its scope
        error, status = exc, status_for(exc.code)
    return ctx.page(
        "audit.html",
        status=status,
        rows=rows,
        filters=given,
        number=number,
        more=more,
        stream=stream,
        error=error_view(error),
    )


def _cell(value: object) -> object:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in COLUMNS])
    return out.getvalue()


def export(kind: str) -> Any:
    """``GET /admin/audit.csv`` or ``.json``: the rows the filters select, newest first."""

    async def endpoint(request: Request) -> Response:
        session = await open_session(request, request.app.state.gateway)
        if session is None:
            return RedirectResponse("/admin/login", 303)
        ctx = Ctx(request, session)
        if not allowed(session.principal, "audit"):
            return ctx.page("denied.html", status=403, code="permission_required")
        try:
            f, _ = _filter(request, EXPORT_ROWS)
            rows = await search_audit(ctx.gw.store, ctx.principal, f)
        except InBandError as exc:
            return await audit_page(ctx, error=exc, status=status_for(exc.code))
        disposition = {"Content-Disposition": f'attachment; filename="toolcrib-audit.{kind}"'}
        if kind == "csv":
            return Response(_csv(rows), media_type="text/csv; charset=utf-8", headers=disposition)
        body = json.dumps(rows, ensure_ascii=False, indent=1)
        return Response(body, media_type="application/json", headers=disposition)

    return endpoint


def routes() -> list[Route]:
    return [
        Route("/audit", page("audit")),
        Route("/audit.csv", export("csv")),
        Route("/audit.json", export("json")),
    ]
