"""Console pages: connections (status, tools, prompts and resources, add, refresh, remove) and
frozen parameters."""

from __future__ import annotations

import shlex
from typing import Any

from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from toolcrib.errors import InBandError, InvalidArguments
from toolcrib.gateway.discovery import tools
from toolcrib.gateway.discovery.search import visibility_of
from toolcrib.gateway.resources.access import may_read
from toolcrib.policy.roles import has_permission
from toolcrib.web.admin.handlers import Ctx, action, builder, done, error_view, page, text

__all__ = ["routes"]


async def _tools_by_connection(ctx: Ctx, names: set[str], every: bool) -> dict[str, list[dict[str, Any]]]:
    """The tools of the connections shown, with their classification as the policy has it now.

    Who may change connections sees every tool (a ``forbidden`` one too); anyone else sees the
    tools search could show them or name as ``restricted``, never a tool hidden from them (R-5.1).
    """
    policy = await ctx.gw.policy.current()
    by_connection: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for tool in await tools.list_tools(ctx.gw, ctx.principal):
        found = ctx.gw.catalog.lookup(tool["name"])
        if tool["connection"] not in names or found is None:
            continue
        if every or visibility_of(ctx.gw, ctx.principal, policy, tool["name"]) != "hidden":
            by_connection[tool["connection"]].append({**tool, "risk": policy.risk_of(found[1])})
    return by_connection


async def _offerings_by_connection(ctx: Ctx, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The prompts and resources (first pages) of each active connection shown, as the member
    would list them over MCP (R-16.1): nothing without ``tool:execute`` and ``mcp:read``."""
    if not may_read(ctx.principal):
        return {}
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("status") != "active":
            continue
        account = {"account": row["name"]}
        prompts = await ctx.op("prompts__list", account)
        resources = await ctx.op("resources__list", account)
        templates = await ctx.op("resources__list_templates", account)
        if prompts["prompts"] or resources["resources"] or templates["resourceTemplates"]:
            found[row["name"]] = {
                "prompts": prompts["prompts"],
                "resources": resources["resources"] + templates["resourceTemplates"],
                "more": bool(prompts["nextCursor"] or resources["nextCursor"] or templates["nextCursor"]),
            }
    return found


@builder("connections")
async def connections_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    rows: list[dict[str, Any]] = await ctx.op("connections__list")
    can_write = has_permission(ctx.principal.role, "connections:write")
    return ctx.page(
        "connections.html",
        status=status,
        rows=rows,
        tools=await _tools_by_connection(ctx, {r["name"] for r in rows}, can_write),
        offerings=await _offerings_by_connection(ctx, rows),
        can_write=can_write,
        stdio_allowed=ctx.gw.settings.allow_remote_stdio,
        error=error_view(error),
    )


async def _create(ctx: Ctx, form: FormData) -> Response:
    args: dict[str, Any] = {"name": text(form, "name") or "", "connector": text(form, "connector") or ""}
    if text(form, "transport") == "stdio":
        command = text(form, "command") or ""
        try:
            args["command"] = shlex.split(command)
        except ValueError as exc:
            raise InvalidArguments(
                "the command line is not valid shell words",
                [{"pointer": "/command", "message": "unbalanced"}],
            ) from exc
    else:
        args["url"] = text(form, "url") or ""
    await ctx.op("connections__create", args)
    return done("connections", "connection_created")


async def _refresh(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("connections__refresh", {"name": text(form, "name") or ""})
    return done("connections", "connection_refreshed")


async def _delete(ctx: Ctx, form: FormData) -> Response:
    await ctx.op("connections__delete", {"name": text(form, "name") or ""})
    return done("connections", "connection_deleted")


@builder("frozen")
async def frozen_page(ctx: Ctx, *, error: InBandError | None = None, status: int = 200) -> Response:
    rows: list[dict[str, Any]] = await ctx.op("frozen__list")  # a secret value is not in it
    reachable = {r["name"] for r in await ctx.op("connections__list")}
    names = [t["name"] for t in await tools.list_tools(ctx.gw, ctx.principal) if t["connection"] in reachable]
    return ctx.page(
        "frozen.html",
        status=status,
        rows=[r for r in rows if r["account"] in reachable],
        tool_names=names,
        error=error_view(error),
    )


async def _freeze(ctx: Ctx, form: FormData) -> Response:
    account, _, tool = (text(form, "tool") or "").partition("__")
    args: dict[str, Any] = {
        "account": account,
        "tool": tool,
        "param": text(form, "param") or "",
        "value": form.get("value"),
    }
    choice = text(form, "secret")  # "" (by the parameter's name), "yes" or "no"
    if choice in ("yes", "no"):
        args["secret"] = choice == "yes"
    await ctx.op("frozen__set", args)
    return done("frozen", "frozen_set")


async def _unfreeze(ctx: Ctx, form: FormData) -> Response:
    args = {name: text(form, name) or "" for name in ("account", "tool", "param")}
    await ctx.op("frozen__unset", args)
    return done("frozen", "frozen_unset")


def routes() -> list[Route]:
    post = ["POST"]
    return [
        Route("/connections", page("connections")),
        Route("/connections/create", action("connections", _create), methods=post),
        Route("/connections/refresh", action("connections", _refresh), methods=post),
        Route("/connections/delete", action("connections", _delete), methods=post),
        Route("/frozen", page("frozen")),
        Route("/frozen/set", action("frozen", _freeze), methods=post),
        Route("/frozen/unset", action("frozen", _unfreeze), methods=post),
    ]
