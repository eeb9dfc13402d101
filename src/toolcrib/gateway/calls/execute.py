"""``execute_tool``: the one execution pipeline of SPEC section 6, every step in order.

There is no other path to a connected tool: the public name and the action handle both unwrap to
the same tool and arguments here, and every gate below runs for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from toolcrib import tracing
from toolcrib.catalog.arguments import check_required, map_arguments, merge_frozen
from toolcrib.catalog.records import ExactRecord
from toolcrib.catalog.validation import validate_arguments
from toolcrib.errors import (
    ApprovalDeclined,
    ApprovalRequired,
    ConnectionInactive,
    FrozenUnmet,
    InBandError,
    InvalidArguments,
    NotFound,
    SchemaChanged,
    ToolChanged,
    UpstreamTimeout,
)
from toolcrib.gateway.audit import entries as audit
from toolcrib.gateway.calls.call_secrets import CallSecrets, redacting_relay
from toolcrib.gateway.calls.interaction import Interaction
from toolcrib.gateway.calls.results import shape_and_store
from toolcrib.gateway.connections.manage import shown_reason, spec_of
from toolcrib.gateway.connections.shown import secrets_of
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery import learning
from toolcrib.gateway.governance import approvals, rate_limits, reach
from toolcrib.gateway.governance.reach import Path
from toolcrib.gateway.resources.shaping import rewrite_links
from toolcrib.gateway.storage import Storage
from toolcrib.logs import traced
from toolcrib.policy.frozen import unmet_frozen
from toolcrib.policy.gates import (
    Principal,
    require_allowed,
    require_execute,
    require_not_forbidden,
    require_scope_for,
    require_tools_scope,
)
from toolcrib.policy.restrictions import Decision
from toolcrib.store.audit import AuditEntry
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.store.handles import HandleRow
from toolcrib.upstream.relay import CallRelay
from toolcrib.upstream.spec import UpstreamSpec

__all__ = ["execute_tool"]


async def execute_tool(
    gw: Gateway,
    principal: Principal,
    *,
    tool: str | None = None,
    action_id: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    interaction: Interaction | None = None,
) -> dict[str, Any]:
    """Run one connected tool; returns the shaped upstream result or raises an in-band error.

    ``interaction`` is what the caller's session can carry (progress, log lines, questions); the
    faces without a session (REST, command line) pass none.

    With traces on (R-14.2) the call is a span, the upstream call a client span whose W3C trace
    context the upstream receives, and each database transaction of a step (the audit row opened
    and closed, a handle read, a rate-limit bucket, a stored result) a span naming that step; they
    carry the tool, the account, the member and the outcome, never an argument or a result.
    """
    with tracing.span("execute_tool", {tracing.MEMBER: principal.member}) as span:
        return await _execute(gw, principal, span, tool, action_id, arguments, interaction)


async def _execute(
    gw: Gateway,
    principal: Principal,
    span: tracing.Span,
    tool: str | None,
    action_id: str | None,
    arguments: Mapping[str, Any] | None,
    interaction: Interaction | None,
) -> dict[str, Any]:
    interaction = interaction or Interaction()
    # 1. resolve: a public name, or a handle (unknown / another member's: not_found; old: handle_expired)
    if (tool is None) == (action_id is None):
        raise InvalidArguments("name the tool by exactly one of `tool` or `action_id`")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise InvalidArguments("`arguments` must be an object", [{"pointer": "", "message": "not an object"}])
    pinned_hash: str | None = None
    handle: HandleRow | None = None
    if action_id is not None:
        with tracing.step("execute.resolve_handle"):
            handle = await gw.handles.resolve(principal, action_id)
        tool, pinned_hash = handle.public_name, handle.schema_hash
    assert tool is not None
    # 2. tool:execute, the member active and the grant unrevoked (authenticate checked the latter two
    #    on this very request, from the database); 3. mcp:tools
    require_execute(principal)
    require_tools_scope(principal)
    # 4. the connection exists and is active
    row, stored = _locate(gw, tool)
    span.set(tracing.OPERATION, stored.record.public_name)
    span.set(tracing.ACCOUNT, row.name)
    span.set(tracing.TOOL, stored.record.name)
    # 5. the tool is in the current catalog and not held (tool_changed, R-13.4); a handle's schema
    #    hash still matches
    if pinned_hash is not None and stored.record.schema_hash != pinned_hash:
        raise SchemaChanged("the tool's schema changed since this handle was issued; search again")
    policy = await gw.policy.current()
    risk = policy.risk_of(stored)
    record = stored.record
    # 6. not forbidden; 7. the restriction resolver; 8. the scope of its classification
    require_not_forbidden(risk)
    require_allowed(_decide(principal, row, record.name, policy.rules, "execute"), record.public_name)
    require_scope_for(principal, risk)
    frozen = policy.frozen_for(row.name, record.name)
    # a tool that appeared without a parameter frozen for it never runs without it
    if frozen and (unmet := unmet_frozen(record.input_schema, frozen)):
        raise FrozenUnmet(record.public_name, unmet)
    hidden = CallSecrets(policy.secret_params(row.name, record.name), policy.frozen_secrets(row.name))
    # 9. aliases back to provider names; 10. frozen values merged over; 11. required; 12. JSON Schema
    exact = map_arguments(record, dict(arguments or {}), frozen=frozen.keys())
    exact = merge_frozen(exact, frozen)
    check_required(record, exact)
    _validate(record, exact, hidden)
    # 12a. the approval step, where a rule asks for one (#14): who approved, or an in-band answer;
    #      before the final check, so a wait for the member's answer is checked again after it
    target = audit.target_id(exact, secret=hidden.params, secrets=hidden.texts)  # never a secret
    with tracing.step("execute.approval"):
        approver = await _approval(gw, principal, row, record, risk, exact, hidden, target, interaction)
    # 13. the final outbound check: the resolver again, and the connection still active
    row, stored = _locate(gw, record.public_name)
    require_allowed(
        _decide(principal, row, record.name, (await gw.policy.current()).rules, "outbound"),
        record.public_name,
    )
    # 13a. the rate limits: a call over one reaches nothing upstream and writes no audit row
    with tracing.step("execute.rate_limits"):
        await rate_limits.check_call(gw, principal, account=row.name, tool=record.name)
    # 14. tools/call upstream with a timeout; 15. the audit entry, opened before and closed after
    spec = spec_of(gw, row, principal.member)  # a per-member OAuth connection: the caller's own grant
    secrets = [
        *secrets_of(gw.policy, spec),
        *hidden.texts,
    ]  # the values this call sent, even if changed since
    relay = redacting_relay(interaction.relay, secrets)
    call = _call_audited(gw, principal, row, record, risk, exact, spec, approver, target, relay)
    raw = await traced("upstream_call", principal.member, record.public_name, call)
    if handle is not None and not raw.get("isError"):  # its search led here: an example
        learning.learn_later(gw, principal, handle, account=row.name, tool=record.name)
    span.outcome("tool_error" if raw.get("isError") else "ok")
    # 16. shape: redaction (the connection's secrets and its secret frozen values), then caps
    with tracing.step("execute.shape"):
        shaped = await shape_and_store(
            gw.store,
            principal,
            raw,
            secrets=secrets,
            operation=record.public_name,
            account=row.name,
            connector=row.connector,
        )
    return rewrite_links(shaped, row.name)  # its resource links read through the gateway


def _validate(record: ExactRecord, exact: dict[str, Any], hidden: CallSecrets) -> None:
    """Step 12; an answer about a secret frozen value does not quote it (R-9.2)."""
    try:
        validate_arguments(record, exact)
    except InvalidArguments as exc:
        if not hidden.params:
            raise
        raise hidden.invalid(exc, record) from None  # the original quotes the value: not chained


async def _call_audited(
    gw: Gateway,
    principal: Principal,
    row: ConnectionRow,
    record: ExactRecord,
    risk: str,
    exact: dict[str, Any],
    spec: UpstreamSpec,
    approver: str | None,
    target: str | None,
    relay: CallRelay | None,
) -> dict[str, Any]:
    """Steps 14 and 15: the row is durable before the call and closed after it (R-11.1).

    The account recorded is the connection the call is sent to. A call the client cancelled (its
    request cancelled, or its HTTP connection closed) closes its row as ``cancelled``; the upstream
    was sent a cancellation. The close is shielded, so it is not cancelled itself; anything else
    that cuts the call off closes it ``unknown``, and a process killed mid-call leaves it
    ``pending``, read as ``unknown`` at the next start.
    """
    with tracing.step("execute.audit_open"):
        entry = await _open_row(gw, principal, row, record, risk, target, approved_by=approver)
    try:
        raw = await _upstream_call(gw, row, record, exact, spec, relay)
    except InBandError as exc:
        outcome = "timeout" if isinstance(exc, UpstreamTimeout) else "error"
        await _close_row(gw.store, entry, outcome, exc.code)
        raise
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await _close_row(gw.store, entry, "cancelled", None)
        raise
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _close_row(gw.store, entry, "unknown", None)
        raise
    is_error = bool(raw.get("isError"))
    # The upstream answered, so the call happened: a cancel landing now must not leave the row
    # open (read as ``unknown``); it is closed with what the upstream said, then the cancel goes on.
    with anyio.CancelScope(shield=True):
        await _close_row(gw.store, entry, "error" if is_error else "ok", "tool_error" if is_error else None)
    return raw


async def _upstream_call(
    gw: Gateway,
    row: ConnectionRow,
    record: ExactRecord,
    exact: dict[str, Any],
    spec: UpstreamSpec,
    relay: CallRelay | None,
) -> dict[str, Any]:
    """Step 14, a client span: the MCP SDK's ``tools/call`` inside it carries its trace context to
    the upstream (``_meta``, and the ``traceparent`` header over HTTP; ``upstream.session``)."""
    attributes = {tracing.ACCOUNT: row.name, tracing.TOOL: record.name, "toolcrib.transport": spec.transport}
    with tracing.span(f"upstream tools/call {record.name}", attributes, kind="client") as span:
        raw = await gw.upstreams.session(spec).call_tool(record.name, exact, relay)
        span.outcome("tool_error" if raw.get("isError") else "ok")
        return raw


async def _close_row(storage: Storage, entry: AuditEntry, outcome: str, error_code: str | None) -> None:
    with tracing.step("execute.audit_close"):
        await audit.close_entry(storage, entry, outcome=outcome, error_code=error_code)


async def _open_row(
    gw: Gateway,
    principal: Principal,
    row: ConnectionRow,
    record: ExactRecord,
    risk: str,
    target: str | None,
    *,
    approved: bool = True,
    approved_by: str | None = None,
) -> AuditEntry:
    """Open the call's audit row: the account reached, the classification, the target id."""
    return await audit.open_entry(
        gw,
        principal,
        account=row.name,
        connector=row.connector,
        operation=record.public_name,
        risk=risk,
        target=target,
        approved=approved,
        approved_by=approved_by,
    )


async def _approval(
    gw: Gateway,
    principal: Principal,
    row: ConnectionRow,
    record: ExactRecord,
    risk: str,
    exact: dict[str, Any],
    hidden: CallSecrets,
    target: str | None,
    interaction: Interaction,
) -> str | None:
    """Step 12a; a declined or deferred call is audited (not approved, with its code) and answered.
    Who is asked, and who may approve, reads the arguments with the secret values redacted."""
    try:
        return await approvals.settle(
            gw,
            principal,
            account=row.name,
            operation=record.public_name,
            risk=risk,
            exact=exact,
            shown=hidden.shown(exact),
            interaction=interaction,
        )
    except (ApprovalDeclined, ApprovalRequired) as exc:
        entry = await _open_row(gw, principal, row, record, risk, target, approved=False)
        await audit.close_entry(gw.store, entry, outcome="error", error_code=exc.code)
        raise
    except anyio.get_cancelled_exc_class():  # cancelled while the member was being asked
        with anyio.CancelScope(shield=True):
            entry = await _open_row(gw, principal, row, record, risk, target, approved=False)
            await audit.close_entry(gw.store, entry, outcome="cancelled", error_code=None)
        raise


def _locate(gw: Gateway, public_name: str) -> tuple[ConnectionRow, StoredTool]:
    found = gw.catalog.lookup(public_name)
    account, sep, _ = public_name.partition("__")
    row = found[0] if found is not None else gw.catalog.connections.get(account) if sep else None
    if row is None:
        raise NotFound(f"no connected tool named {public_name!r}; find tools with search")
    if row.status != "active":
        raise ConnectionInactive(account, row.status, shown_reason(gw, row))
    if found is None:
        raise NotFound(f"no connected tool named {public_name!r}; find tools with search")
    stored = found[1]
    if stored.held:  # step 5: its definition changed since it was accepted
        raise ToolChanged(
            f"{public_name} changed at its server since it was accepted: it runs again once an admin "
            "accepts the change"
        )
    return row, stored


def _decide(principal: Principal, row: ConnectionRow, tool: str, rules: Any, where: Path) -> Decision:
    return reach.decide(rules, principal, account=row.name, connector=row.connector, tool=tool, where=where)
