"""The MCP face: ``tools/list`` and ``tools/call`` over the gateway functions (SPEC sections 2, 3, 10);
prompts and resources of connections in ``mcp_offerings`` (section 16)."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning

from toolcrib.errors import InvalidArguments, NotFound
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.calls.interaction import AskLater, Interaction
from toolcrib.gateway.control import ControlPlane
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.search import flat_listing_bytes, search_tools
from toolcrib.gateway.discovery.surface import SURFACES, Surface, meta_input_schemas, meta_tool_definitions
from toolcrib.gateway.faults import in_band
from toolcrib.gateway.inputs import validate_input
from toolcrib.logs import traced
from toolcrib.policy.gates import Principal, lists_tools, require_execute
from toolcrib.web.interaction import ask_later_result, interaction_of
from toolcrib.web.log_levels import SessionLogLevels
from toolcrib.web.mcp_offerings import AnnouncingServer, Offerings
from toolcrib.web.telemetry import Telemetry

__all__ = [
    "PRINCIPAL_KEY",
    "McpFace",
    "build_mcp_server",
    "on_call_tool",
    "on_list_tools",
    "on_set_logging_level",
]

PRINCIPAL_KEY = "toolcrib.principal"
logger = logging.getLogger(__name__)


def _principal(ctx: ServerRequestContext[Any]) -> Principal:
    request = ctx.request
    principal = request.scope.get(PRINCIPAL_KEY) if request is not None else None
    if not isinstance(principal, Principal):
        raise RuntimeError("the /mcp endpoint is served only behind the bearer check")
    return principal


def _answer(payload: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=payload, is_error=error
    )


def _passthrough(result: dict[str, Any]) -> types.CallToolResult:
    """A shaped upstream result, as it came (R-3.3)."""
    return types.CallToolResult.model_validate(
        {k: v for k, v in result.items() if k in ("content", "structuredContent", "isError", "_meta")}
    )


@dataclass(frozen=True)
class McpFace:
    """What the MCP handlers use: the server's lifespan state, which every request's context carries.

    The handlers are module-level functions; each finds this in ``ctx.lifespan_context``."""

    gw: Gateway
    control: ControlPlane
    telemetry: Telemetry
    surface: Surface
    levels: SessionLogLevels
    meta_tools: list[types.Tool]
    meta_schemas: dict[str, Any]
    offerings: Offerings
    """Prompts and resources of connections (section 16)."""


def build_mcp_server(gw: Gateway, control: ControlPlane, telemetry: Telemetry) -> Server[Any]:
    face = McpFace(
        gw=gw,
        control=control,
        telemetry=telemetry,
        surface=SURFACES[gw.settings.surface],
        levels=SessionLogLevels(),
        meta_tools=[types.Tool.model_validate(t) for t in meta_tool_definitions(gw.settings.surface)],
        meta_schemas=meta_input_schemas(gw.settings.surface),
        offerings=Offerings(gw, _principal),
    )
    # The SDK checks a tools/call's ``Mcp-Param-*`` headers against the tool's inputSchema; without
    # this lookup it finds the schema by running the whole ``tools/list`` handler on every call (#12).
    schemas: dict[str, Any] = {
        **face.meta_schemas,
        **{n: op.input_schema for n, op in control.all_operations()},
    }
    return _server(face, schemas)


@asynccontextmanager
async def _lifespan(face: McpFace, server: Server[Any]) -> AsyncIterator[McpFace]:
    """The server's lifespan (entered once by the session manager): the face's state, as it is;
    while it lasts, upstreams' prompt and resource changes reach the clients (R-16.3)."""
    stop = face.gw.upstreams.listen_offerings(face.offerings.changed) if face.gw.running else None
    try:
        yield face
    finally:
        if stop is not None:
            stop()


def _face(ctx: ServerRequestContext[Any]) -> McpFace:
    face = ctx.lifespan_context
    if not isinstance(face, McpFace):
        raise RuntimeError("the MCP server runs only with its lifespan state")
    return face


async def on_list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    face = _face(ctx)
    principal = _principal(ctx)
    if not lists_tools(principal):
        return types.ListToolsResult(tools=[])
    tools = face.meta_tools + [types.Tool.model_validate(t) for t in face.control.definitions_for(principal)]
    listing = [t.model_dump(mode="json", by_alias=True) for t in tools]
    face.telemetry.sent(
        principal, tools_list=listing, flat_bytes=await flat_listing_bytes(face.gw, principal)
    )
    return types.ListToolsResult(tools=tools)


async def _dispatch(
    face: McpFace, principal: Principal, name: str, args: object, interaction: Interaction | None = None
) -> types.CallToolResult:
    require_execute(principal)  # the endpoint gate, ahead of every name, handle and scope
    surface = face.surface
    if name == surface.search:
        checked = validate_input(face.meta_schemas[name], args)
        query = checked[surface.query_arg]
        if not query.strip():
            raise InvalidArguments(
                f"`{surface.query_arg}` is blank",
                [{"pointer": f"/{surface.query_arg}", "message": "blank"}],
            )
        found = await search_tools(face.gw, principal, query, checked.get("limit", 3))
        face.telemetry.searched(principal, found)
        return _answer(found)
    if name == surface.execute:
        checked = validate_input(face.meta_schemas[name], args)
        result = await execute_tool(
            face.gw,
            principal,
            tool=checked.get("tool"),
            action_id=checked.get(surface.handle_arg),
            arguments=checked.get(surface.arguments_arg),
            interaction=interaction,
        )
        return _passthrough(result)
    if face.control.has(name):
        return _answer(await face.control.call(principal, name, args))
    raise NotFound(f"no tool named {name!r}; connected tools are found with {surface.search}")


async def on_call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """Every exception becomes an in-band answer (R-3.3): never a JSON-RPC error from a crash.

    An approval question for a 2026-07-28 client is the one other answer: an
    ``InputRequiredResult`` the client answers by calling again (#14)."""
    face = _face(ctx)
    principal = _principal(ctx)
    name = params.name
    interaction = (
        interaction_of(ctx, params, face.levels.level_of(ctx)) if name == face.surface.execute else None
    )
    with face.telemetry.call(name) as outcome:
        try:
            work = _dispatch(face, principal, name, params.arguments or {}, interaction)
            result = await traced("tool_call", principal.member, name, work, _tool_outcome)
        except AskLater as asked:
            return ask_later_result(asked)
        except Exception as exc:
            error = in_band(exc)
            outcome.error(error.code)
            return _answer(error.to_payload(), error=True)
        if result.is_error:
            outcome.error("tool_error")
        return result


async def on_set_logging_level(
    ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """``logging/setLevel``: the session's level, kept in the face's table (R-2.6)."""
    return await _face(ctx).levels.on_set_level(ctx, params)


def _server(face: McpFace, schemas: dict[str, Any]) -> Server[Any]:
    """The SDK's low-level server over the handlers (R-2.6: ``logging/setLevel`` served too)."""
    with warnings.catch_warnings():  # logging/setLevel is deprecated at 2026-07-28, still served before
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return AnnouncingServer(
            "toolcrib",
            announce=not face.gw.settings.stateless,
            version="0.1.0",
            lifespan=partial(_lifespan, face),
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_set_logging_level=on_set_logging_level,
            get_tool_input_schema=schemas.get,
            **face.offerings.handlers(),  # prompts and resources
        )


def _tool_outcome(result: types.CallToolResult) -> str:
    return "tool_error" if result.is_error else "ok"
