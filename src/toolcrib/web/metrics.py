"""``GET /metrics``: Prometheus text for grants that may read usage or the audit trail (R-14.1, #10).

The route sits behind the same bearer check as ``/mcp`` and ``/api``. The figures say how the
organization uses its tools, so they are read with the bar of usage and audit reads: the member's
role holds ``usage:read`` or ``audit:read`` (owner, admin, auditor, billing_admin) and the grant
holds ``mcp:read``. A scraper gets a member of its own (``billing_admin`` or ``auditor``) and a
token, revocable like any other; there is no separate metrics secret to manage.

A scraper that asks for OpenMetrics (``Accept: application/openmetrics-text``, as Prometheus does
with exemplar storage on) gets that format, whose latency buckets carry the trace id of an
observation when traces are on (R-14.2); any other gets the classic text format.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router

from toolcrib.auth.metadata import www_authenticate
from toolcrib.errors import InBandError, ScopeRequired
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal, require
from toolcrib.settings import Settings
from toolcrib.web.rest import METADATA_PATH
from toolcrib.web.telemetry import Telemetry

__all__ = ["METRICS_PERMISSIONS", "OPENMETRICS", "metrics_router", "require_metrics_reader"]

OPENMETRICS = "application/openmetrics-text"
OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

METRICS_PERMISSIONS = ("usage:read", "audit:read")
"""A grant reads ``/metrics`` when its member's role holds one of these and it holds ``mcp:read``."""


def require_metrics_reader(principal: Principal) -> None:
    """``permission_required`` naming ``usage:read``, then ``scope_required`` naming ``mcp:read``:
    the one authorization check of every face (``policy.gates.require``), for a read."""
    require(principal, METRICS_PERMISSIONS, "read")


def metrics_router(settings: Settings, telemetry: Telemetry, principal_key: str) -> Router:
    """The route; the caller puts it behind the bearer check, which sets ``principal_key``."""

    async def metrics(request: Request) -> Response:
        principal = request.scope.get(principal_key)
        assert isinstance(principal, Principal)
        try:
            require_metrics_reader(principal)
        except InBandError as exc:
            return _refusal(exc, settings)
        gw: Gateway = request.app.state.gateway
        telemetry.audit_rows.set(gw.audit_rows_written)
        wanted = OPENMETRICS in request.headers.get("accept", "")  # exemplars ride only on this format
        text = await anyio.to_thread.run_sync(telemetry.render, wanted)  # off the event loop
        return Response(text, media_type=OPENMETRICS_TYPE if wanted else "text/plain; version=0.0.4")

    return Router(routes=[Route("/metrics", metrics, methods=["GET"])])


def _refusal(exc: InBandError, settings: Settings) -> Response:
    headers = {}
    if isinstance(exc, ScopeRequired):  # RFC 6750: the grant is short of a scope
        metadata_url = settings.resource_url + METADATA_PATH
        headers["WWW-Authenticate"] = www_authenticate(
            metadata_url, error="insufficient_scope", scope=exc.scope
        )
    return JSONResponse(exc.to_payload(), 403, headers=headers)
