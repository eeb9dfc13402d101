"""What the session of one ``tools/call`` can carry (#14), read from the SDK's request context.

- Progress: when the request carries a progress token, the upstream's progress notifications are
  sent on as this request's own (the SDK re-targets them to the client's token).
- Log lines: when the client opted in (2026-07-28: the request's ``io.modelcontextprotocol/logLevel``;
  earlier versions: a stateful session), the upstream's log lines of this call are sent on.
- Questions (elicitation): a client that declared elicitation is asked during the call on a session
  with a back-channel (stateful, before 2026-07-28), or by an ``InputRequiredResult`` on 2026-07-28,
  answered by calling again. A stateless session before 2026-07-28 cannot be asked anything.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolcrib.gateway.calls.interaction import Action, ApprovalPrompt, AskLater, Interaction
from toolcrib.upstream.relay import CallRelay

__all__ = ["APPROVAL_INPUT", "ask_later_result", "interaction_of"]

APPROVAL_INPUT = "toolcrib_approval"
"""The key of the approval question in an ``InputRequiredResult`` and of its answer."""

_NO_FIELDS: types.ElicitRequestedSchema = {"type": "object", "properties": {}}
_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def interaction_of(
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    session_level: types.LoggingLevel | None = None,
) -> Interaction:
    """``session_level``: what the session asked for with ``logging/setLevel`` (R-2.6), if anything."""
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    capabilities = ctx.session.client_capabilities
    elicits = capabilities is not None and capabilities.elicitation is not None
    live = elicits and not modern and ctx.session.can_send_request
    raw: Mapping[str, Any] = ctx.params or {}
    level = _log_level(raw, modern, ctx.session.can_send_request, session_level)
    relay = CallRelay(
        progress=_progress(ctx) if progress_token_from_params(raw) is not None else None,
        log=_log(ctx) if level is not None else None,
        log_level=level,
        elicit=_elicit(ctx) if live else None,
    )
    return Interaction(
        relay=relay,
        ask=_ask(ctx) if live else None,
        ask_later=elicits and modern,
        answer=_answer(params) if modern else None,
    )


def _log_level(
    raw: Mapping[str, Any], modern: bool, stateful: bool, session_level: types.LoggingLevel | None
) -> types.LoggingLevel | None:
    """The request's own opt-in (2026-07-28), else the session's ``logging/setLevel`` (``info``
    until it sends one); a stateless request of an older version gets no log lines."""
    meta = raw.get("_meta")
    requested = meta.get(types.LOG_LEVEL_META_KEY) if isinstance(meta, Mapping) else None
    if requested in _LEVELS:
        return cast(types.LoggingLevel, requested)
    if not stateful or modern:
        return None
    return session_level or "info"


def _progress(ctx: ServerRequestContext[Any]) -> Any:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(value, total, message)

    return progress


def _log(ctx: ServerRequestContext[Any]) -> Any:
    async def log(params: types.LoggingMessageNotificationParams) -> None:
        with warnings.catch_warnings():  # the logging capability is deprecated, not gone (SEP-2577)
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.session.send_log_message(
                params.level, params.data, params.logger, related_request_id=ctx.request_id
            )

    return log


def _elicit(ctx: ServerRequestContext[Any]) -> Any:
    async def elicit(params: types.ElicitRequestParams) -> types.ElicitResult:
        request = types.ElicitRequest(params=params)
        return await ctx.session.send_request(request, types.ElicitResult, metadata=_related(ctx))

    return elicit


def _ask(ctx: ServerRequestContext[Any]) -> Any:
    async def ask(prompt: ApprovalPrompt) -> Action:
        result = await ctx.session.elicit_form(
            prompt.message(), _NO_FIELDS, related_request_id=ctx.request_id
        )
        return result.action

    return ask


def _related(ctx: ServerRequestContext[Any]) -> Any:
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=ctx.request_id)


def _answer(params: types.CallToolRequestParams) -> tuple[str, Action] | None:
    """The approval answer a client sent back with its second call (2026-07-28)."""
    answer = (params.input_responses or {}).get(APPROVAL_INPUT)
    if answer is None or not params.request_state:
        return None
    action = getattr(answer, "action", None)
    if action is None and isinstance(answer, Mapping):
        action = answer.get("action")
    return (params.request_state, action if action in ("accept", "decline", "cancel") else "decline")


def ask_later_result(asked: AskLater) -> types.InputRequiredResult:
    """The approval question as an ``InputRequiredResult``; the approval id rides as its state."""
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=asked.prompt.message(), requested_schema=_NO_FIELDS)
    )
    return types.InputRequiredResult(
        input_requests={APPROVAL_INPUT: question}, request_state=asked.prompt.approval_id
    )
