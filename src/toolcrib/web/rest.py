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
from toolcrib.errors import InBandError, ScopeRequired, ToolcribError
from toolcrib.gateway.control import ControlPlane
from toolcrib.policy.gates import Principal

__all__ = ["METADATA_PATH", "openapi_document", "rest_routes"]

METADATA_PATH = "/.well-known/oauth-protected-resource"

_STATUS = {
    "permission_required": 403,
    "scope_required": 403,
    "not_found": 404,
    "restricted": 403,
    "forbidden": 403,
    "invalid_arguments": 400,
    "needs_input": 400,
}


def openapi_document(control: ControlPlane, server_url: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for name, op in control.all_operations():
        schema: dict[str, Any] = {"type": "object", "properties": op.properties}
        if op.required:
            schema["required"] = list(op.required)
        paths[f"/api/{op.resource}/{op.operation}"] = {
            "post": {
                "operationId": name,
                "summary": op.description,
                "requestBody": {"content": {"application/json": {"schema": schema}}},
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
            body = json.loads(await request.body() or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            return JSONResponse({"error": {"code": "invalid_arguments", "message": str(exc)}}, 400)
        try:
            return JSONResponse(await control.call(principal, name, body, over_mcp=False))
        except ScopeRequired as exc:  # RFC 6750: the grant is short of a scope
            metadata = str(request.url.replace(path=METADATA_PATH, query=""))
            challenge = www_authenticate(metadata, error="insufficient_scope", scope=exc.scope)
            return JSONResponse(exc.to_payload(), 403, headers={"WWW-Authenticate": challenge})
        except InBandError as exc:
            return JSONResponse(exc.to_payload(), _STATUS.get(exc.code, 502))
        except ToolcribError as exc:
            return JSONResponse({"error": {"code": "invalid_arguments", "message": exc.message}}, 400)

    return [Route("/api/{resource}/{operation}", call, methods=["POST"])]
