"""The MCP face of prompts and resources (SPEC section 16): ``prompts/list``, ``prompts/get``,
``resources/list``, ``resources/templates/list`` and ``resources/read`` over
``gateway.resources``. Registering these handlers advertises the ``prompts`` and ``resources``
capabilities.

A refusal is a JSON-RPC error (these methods have no in-band ``isError`` result): its ``data``
holds the in-band error object (``{"code": "not_found", ...}``, R-3.3). ``not_found`` and
``invalid_arguments`` are ``-32602`` (invalid params), the others ``-32603``; a message is the
gateway's own words, never an upstream's or Python's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from toolcrib.errors import InvalidArguments
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.faults import in_band
from toolcrib.gateway.resources.listing import list_offered
from toolcrib.gateway.resources.offerings import Kind
from toolcrib.gateway.resources.reading import get_prompt, read_resource
from toolcrib.gateway.resources.subscribing import subscribe, unsubscribe
from toolcrib.policy.gates import Principal
from toolcrib.web.mcp_listeners import Listeners
from toolcrib.web.mcp_streams import Streams

__all__ = ["AnnouncingServer", "Offerings", "rpc_error"]

T = TypeVar("T")
_PARAMS_CODES = frozenset({"not_found", "invalid_arguments", "needs_input"})


def rpc_error(exc: BaseException) -> MCPError:
    """The JSON-RPC error answering ``exc``, its in-band error object as ``data``."""
    error = in_band(exc)
    code = INVALID_PARAMS if error.code in _PARAMS_CODES else INTERNAL_ERROR
    return MCPError(code, error.message, error.to_payload()["error"])


async def _answered(work: Callable[[], Awaitable[T]]) -> T:
    try:
        return await work()
    except MCPError:
        raise
    except Exception as exc:
        raise rpc_error(exc) from None


class AnnouncingServer(Server[Any]):
    """The SDK's low-level server, announcing ``listChanged`` for prompts and resources when the
    gateway keeps sessions (``announce``): then it passes upstreams' changes on (``Listeners``)."""

    def __init__(self, *args: Any, announce: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._announce = announce

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            prompts_changed=self._announce, resources_changed=self._announce
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def _cursor(params: types.PaginatedRequestParams | None) -> str | None:
    return params.cursor if params is not None else None


class Offerings:
    """The handlers of the prompt and resource methods, over one gateway.

    ``principal_of`` reads the caller of a request (the bearer check put it on the request)."""

    def __init__(self, gw: Gateway, principal_of: Callable[[ServerRequestContext[Any]], Principal]) -> None:
        self._gw = gw
        self._principal_of = principal_of
        self.listeners = Listeners(gw)
        """The clients told when an upstream's prompts or resources change (before 2026-07-28)."""
        self.streams = Streams(gw, principal_of, lambda uri: self.listeners.subscribers(uri) > 0)
        """Their ``subscriptions/listen`` streams (2026-07-28)."""
        self.listeners.also_held = self.streams.holds

    async def changed(self, account: str, kind: str, uri: str) -> None:
        """An upstream's prompts or resources changed: tell who listens."""
        await self.listeners.changed(account, kind, uri)
        await self.streams.changed(account, kind, uri)

    def handlers(self) -> dict[str, Any]:
        """The ``Server(...)`` keyword arguments of these handlers."""
        return {
            "on_list_prompts": self.on_list_prompts,
            "on_get_prompt": self.on_get_prompt,
            "on_list_resources": self.on_list_resources,
            "on_list_resource_templates": self.on_list_resource_templates,
            "on_read_resource": self.on_read_resource,
            "on_subscribe_resource": self.on_subscribe_resource,
            "on_unsubscribe_resource": self.on_unsubscribe_resource,
            **({} if self._gw.settings.stateless else {"on_subscriptions_listen": self.streams.handler}),
        }

    async def _page(
        self, ctx: ServerRequestContext[Any], kind: Kind, cursor: str | None
    ) -> tuple[list[Any], str | None]:
        principal = self._principal_of(ctx)
        self.listeners.seen(ctx, principal)
        return await _answered(lambda: list_offered(self._gw, principal, kind, cursor))

    async def on_list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        items, following = await self._page(ctx, "prompts", _cursor(params))
        return types.ListPromptsResult.model_validate({"prompts": items, "nextCursor": following})

    async def on_list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        items, following = await self._page(ctx, "resources", _cursor(params))
        return types.ListResourcesResult.model_validate({"resources": items, "nextCursor": following})

    async def on_list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        items, following = await self._page(ctx, "resources/templates", _cursor(params))
        return types.ListResourceTemplatesResult.model_validate(
            {"resourceTemplates": items, "nextCursor": following}
        )

    async def on_get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        principal = self._principal_of(ctx)
        result = await _answered(lambda: get_prompt(self._gw, principal, params.name, params.arguments))
        return types.GetPromptResult.model_validate(result)

    async def on_read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        principal = self._principal_of(ctx)
        result = await _answered(lambda: read_resource(self._gw, principal, params.uri))
        return types.ReadResourceResult.model_validate(result)

    async def on_subscribe_resource(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Passed through to the upstream where it offers subscriptions; needs a session."""
        principal = self._principal_of(ctx)
        listener = self.listeners.seen(ctx, principal)
        if listener is None:
            raise rpc_error(InvalidArguments("a subscription needs a session (this request has none)"))
        await self.listeners.release()  # what forgotten clients held first: room for this one
        await _answered(lambda: subscribe(self._gw, principal, params.uri))
        listener.subscribed.add(params.uri)
        return types.EmptyResult()

    async def on_unsubscribe_resource(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        principal = self._principal_of(ctx)
        listener = self.listeners.seen(ctx, principal)
        if listener is not None and params.uri in listener.subscribed:
            listener.subscribed.discard(params.uri)
            if not self.listeners.subscribers(params.uri):
                await _answered(lambda: unsubscribe(self._gw, principal, params.uri))
        return types.EmptyResult()
