"""The REST face of the control plane (R-10.2): ``POST /api/{resource}/{operation}``.

It dispatches to the same ``ControlPlane`` operations as the MCP face, with the same permission
and scope checks; ``GET /api/openapi.json`` describes them.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolcrib.auth.metadata import www_authenticate
from toolcrib.errors import InBandError, InvalidArguments, RateLimited, ScopeRequired
from toolcrib.gateway.control import ControlPlane
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.faults import in_band
from toolcrib.gateway.governance import approvals
from toolcrib.policy.gates import Principal

__all__ = ["METADATA_PATH", "openapi_document", "rest_routes", "status_for"]

METADATA_PATH = "/.well-known/oauth-protected-resource"

_STATUS = {
    "permission_required": 403,
    "scope_required": 403,
    "not_found": 404,
    "approval_required": 403,
    "approval_declined": 403,
    "restricted": 403,
    "forbidden": 403,
    "invalid_arguments": 400,
    "needs_input": 400,
    "connection_inactive": 409,
    "handle_expired": 410,
    "schema_changed": 409,
    "tool_changed": 409,
    "rate_limited": 429,
    "too_large": 413,
    "store_busy": 503,
    "cancelled": 499,  # the client closed the request (the status nginx logs for it)
    "internal_error": 500,
}
"""HTTP status by in-band code; the body is the same ``{"error": ...}`` object as over MCP (R-3.3)."""


def status_for(code: str) -> int:
    """The HTTP status of an in-band error code on the HTTP faces (REST, the admin console)."""
    return _STATUS.get(code, 502)


def openapi_document(control: ControlPlane, server_url: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for name, op in control.all_operations():
        paths[f"/api/{op.resource}/{op.operation}"] = {
            "post": {
                "operationId": name,
                "summary": op.description,
                "requestBody": {"content": {"application/json": {"schema": op.input_schema}}},
                "responses": {
                    "200": {"description": "the operation's result"},
                    "4XX": {"description": "an error"},
                },
                "security": [{"bearer": []}],
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "toolcrib control plane", "version": "0.1.0"},
        "servers": [{"url": server_url}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }


def rest_routes(prefix: str, principal_key: str) -> list[Route]:
    """The routes; ``request.app.state.control`` is the live ControlPlane (set at start-up)."""

    async def call(request: Request) -> Response:
        control: ControlPlane = request.app.state.control
        principal = request.scope.get(principal_key)
        assert isinstance(principal, Principal)
        name = f"{prefix}__{request.path_params['resource']}__{request.path_params['operation']}"
        if not control.has(name):
            return JSONResponse({"error": {"code": "not_found", "message": f"no operation {name}"}}, 404)
        try:
            body = _parse(await request.body())
            return JSONResponse(await control.call(principal, name, body, over_mcp=False))
        except ScopeRequired as exc:  # RFC 6750: the grant is short of a scope
            metadata = str(request.url.replace(path=METADATA_PATH, query=""))
            challenge = www_authenticate(metadata, error="insufficient_scope", scope=exc.scope)
            return JSONResponse(exc.to_payload(), 403, headers={"WWW-Authenticate": challenge})
        except Exception as exc:
            return _error_response(in_band(exc))

    async def show_approval(request: Request) -> Response:
        """``GET /api/approvals/{id}``: what an approval would let run, its exact arguments too, for
        who may approve it (the approval link's data)."""
        principal = request.scope.get(principal_key)
        assert isinstance(principal, Principal)
        try:
            gw: Gateway = request.app.state.gateway
            details = await approvals.approval_details(gw, request.path_params["approval_id"], principal)
            return JSONResponse(details)
        except Exception as exc:
            return _error_response(in_band(exc))

    return [
        Route("/api/approvals/{approval_id}", show_approval, methods=["GET"]),
        Route("/api/{resource}/{operation}", call, methods=["POST"]),
    ]


def _parse(raw: bytes) -> object:
    """The JSON body ({} when empty); what is not JSON is ``invalid_arguments``, in our words."""
    try:
        return json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise InvalidArguments(
            "the body must be a JSON object", [{"pointer": "", "message": "not JSON"}]
        ) from exc


def _error_response(error: InBandError) -> Response:
    status = status_for(error.code)
    headers = {"Retry-After": "1"} if error.code == "store_busy" else None
    if isinstance(error, RateLimited):  # whole seconds, as in the in-band ``retry_after``
        headers = {"Retry-After": str(error.retry_after)}
    return JSONResponse(error.to_payload(), status, headers=headers)
