"""Control-plane operations ``{prefix}__{resource}__{operation}`` (SPEC section 10).

Each operation names its permission (``policy.operations``) and is classified by its own verb
(read/write/destructive, R-7.3), which its annotations state (R-10.2); ``tools/list`` shows exactly
the ones the caller may use. Its ``inputSchema``, derived from the operation's typed argument model
in :mod:`toolcrib.operations` (#33), is the one :func:`validate_input` checks on every face before
the handler runs. MCP, REST, the console and the command ``toolcrib {resource} {operation}`` all
dispatch through :class:`ControlPlane`.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from toolcrib.errors import InvalidArguments, NotFound
from toolcrib.gateway.audit import entries as audit
from toolcrib.gateway.calls import results
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.connections import pins
from toolcrib.gateway.connections.registry import adding as registry
from toolcrib.gateway.connections.registry import finding
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery import diagnose, learning
from toolcrib.gateway.governance import approvals, rate_limits, restrictions
from toolcrib.gateway.identity import grants, members
from toolcrib.gateway.inputs import validate_input
from toolcrib.gateway.operation_input import check_operation_input
from toolcrib.gateway.resources import faces as offerings
from toolcrib.operations import (
    Account,
    ApprovalsSet,
    Arguments,
    AuditSearch,
    ConnectionsCreate,
    ConnectionsUpdate,
    ConnectorsSearch,
    ConnectorsUpgrade,
    FrozenSet,
    FrozenUnset,
    GrantsCreate,
    GrantsList,
    Id,
    LimitsSet,
    MembersInvite,
    MembersUpdateRole,
    Name,
    NoArguments,
    OfferingsList,
    ResourcesRead,
    RestrictionsCreate,
    RestrictionsExplain,
    ResultsRead,
    SearchForget,
    ToolsAccept,
    ToolsReject,
    input_schema,
    spec,
)
from toolcrib.policy.classify import classify_operation
from toolcrib.policy.gates import Principal, can_use_operation, require_execute, require_operation
from toolcrib.policy.operations import permission_of
from toolcrib.policy.roles import role_permissions
from toolcrib.store.audit import AuditFilter

__all__ = ["ControlPlane", "Operation", "check_operation_input"]

Handler = Callable[[Gateway, Principal, Any], Awaitable[Any]]
"""An operation's handler: the gateway, the caller, and its arguments as the operation's typed model."""

_HINTS: dict[str, dict[str, bool]] = {
    # MCP's defaults are readOnlyHint false, destructiveHint true: each class states the one that differs
    "read": {"readOnlyHint": True},
    "write": {"destructiveHint": False},
    "destructive": {"destructiveHint": True},
}


@dataclass(frozen=True, slots=True)
class Operation:
    resource: str
    operation: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    arguments: type[Arguments]
    over_mcp: bool = True
    """Listed and called as a tool over MCP (``OperationSpec.over_mcp``)."""

    @property
    def annotations(self) -> dict[str, bool]:
        """readOnlyHint / destructiveHint from the operation's classification (R-7.3, R-10.2)."""
        return _HINTS[classify_operation(self.operation)]

    def definition(self, name: str) -> dict[str, Any]:
        """The ``tools/list`` entry."""
        return {
            "name": name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": self.annotations,
        }


def _op(resource: str, operation: str) -> Callable[[Handler], Operation]:
    """The handler of ``resource__operation``, its description and schema from its typed model."""
    described = spec(resource, operation)
    schema = input_schema(described.arguments)

    def wrap(handler: Handler) -> Operation:
        taken = list(inspect.signature(handler).parameters.values())[2].annotation
        if taken != described.arguments.__name__:  # annotations are strings here (PEP 563)
            raise TypeError(f"{handler.__name__} must take {described.arguments.__name__}, not {taken}")
        return Operation(
            resource,
            operation,
            described.description,
            schema,
            handler,
            described.arguments,
            described.over_mcp,
        )

    return wrap


def _conn_views(rows: list[Any]) -> list[dict[str, Any]]:
    return [connections.connection_view(r) for r in rows]


@_op("connections", "list")
async def _connections_list(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return _conn_views(await connections.list_connections(gw, caller))


@_op("connections", "get")
async def _connections_get(gw: Gateway, caller: Principal, a: Name) -> Any:
    return connections.connection_view(await connections.get_connection(gw, a.name, caller))


@_op("connections", "create")
async def _connections_create(gw: Gateway, caller: Principal, a: ConnectionsCreate) -> Any:
    if a.from_registry is not None:
        return await _connections_create_from_registry(gw, caller, a, a.from_registry)
    if a.connector is None:
        raise InvalidArguments("`connector` is required", [{"pointer": "/connector", "message": "required"}])
    client = {k: getattr(a, k) for k in ("client_id", "client_secret", "scope", "per_member")}
    row = await connections.add_connection(
        gw,
        a.name,
        connector=a.connector,
        command=a.command,
        url=a.url,
        oauth=connections.oauth_option(a.oauth, client),
        actor=caller,
        pinning=(a.pinning if a.pinning is not None else "accept"),
    )
    return connections.connection_view(row)


async def _connections_create_from_registry(
    gw: Gateway, caller: Principal, a: ConnectionsCreate, source: str
) -> Any:
    """``from_registry`` NAME[@VERSION] with ``inputs`` (R-13.9); a command or URL is not given too.
    A remote that authorizes with OAuth takes ``oauth`` and its client fields as any URL does."""
    given = [k for k in ("command", "url") if getattr(a, k) is not None]
    if given:
        errors = [{"pointer": f"/{k}", "message": "not with from_registry"} for k in given]
        raise InvalidArguments("from_registry defines the connection: give no command or url", errors)
    client = {k: getattr(a, k) for k in ("client_id", "client_secret", "scope", "per_member")}
    row = await registry.add_from_registry(
        gw,
        a.name,
        source,
        inputs=registry.parse_inputs(a.inputs),
        actor=caller,
        connector=a.connector,
        pinning=(a.pinning if a.pinning is not None else "accept"),
        oauth=connections.oauth_option(a.oauth, client),
    )
    return connections.connection_view(row)


@_op("connections", "update")
async def _connections_update(gw: Gateway, caller: Principal, a: ConnectionsUpdate) -> Any:
    return connections.connection_view(
        await connections.update_connection(gw, a.name, connector=a.connector, actor=caller)
    )


@_op("connections", "delete")
async def _connections_delete(gw: Gateway, caller: Principal, a: Name) -> Any:
    await connections.remove_connection(gw, a.name, caller)
    return {"removed": a.name}


@_op("connections", "refresh")
async def _connections_refresh(gw: Gateway, caller: Principal, a: Name) -> Any:
    return connections.connection_view(await connections.refresh_connection(gw, a.name, caller))


@_op("connectors", "search")
async def _connectors_search(gw: Gateway, caller: Principal, a: ConnectorsSearch) -> Any:
    require_operation(caller, "connections:write", "search")
    return await finding.search(registry.reader_of(gw), a.words)


@_op("connectors", "show")
async def _connectors_show(gw: Gateway, caller: Principal, a: Name) -> Any:
    require_operation(caller, "connections:write", "show")
    return finding.entry_view(await finding.find(registry.reader_of(gw), a.name))


@_op("connectors", "updates")
async def _connectors_updates(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return await registry.updates(gw, caller)


@_op("connectors", "upgrade")
async def _connectors_upgrade(gw: Gateway, caller: Principal, a: ConnectorsUpgrade) -> Any:
    row = await registry.upgrade(
        gw,
        a.name,
        version=a.version,
        inputs=registry.parse_inputs(a.inputs),
        actor=caller,
    )
    return connections.connection_view(row)


@_op("members", "list")
async def _members_list(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return [members.member_view(m) for m in await members.list_members(gw.store, caller)]


@_op("members", "invite")
async def _members_invite(gw: Gateway, caller: Principal, a: MembersInvite) -> Any:
    return members.member_view(await members.add_member(gw.store, a.name, a.role, caller))


@_op("members", "update_role")
async def _members_update_role(gw: Gateway, caller: Principal, a: MembersUpdateRole) -> Any:
    pinned = a.pinned is not False
    await members.set_role(gw.store, a.name, a.role, caller, pinned=pinned)
    return {"name": a.name, "role": a.role, "pinned": pinned}


@_op("members", "suspend")
async def _members_suspend(gw: Gateway, caller: Principal, a: Name) -> Any:
    await members.suspend_member(gw.store, a.name, caller)
    return {"suspended": a.name}


@_op("members", "remove")
async def _members_remove(gw: Gateway, caller: Principal, a: Name) -> Any:
    await members.remove_member(gw.store, a.name, caller)
    return {"removed": a.name}


@_op("grants", "list")
async def _grants_list(gw: Gateway, caller: Principal, a: GrantsList) -> Any:
    return await grants.list_grants(gw.store, caller, a.member)


@_op("grants", "create")
async def _grants_create(gw: Gateway, caller: Principal, a: GrantsCreate) -> Any:
    grant, token = await members.create_token(
        gw.store, a.member, a.scopes or members.DEFAULT_SCOPES, actor=caller
    )
    return {"id": grant.id, "token": token}


@_op("grants", "revoke")
async def _grants_revoke(gw: Gateway, caller: Principal, a: Id) -> Any:
    await grants.revoke_grant(gw.store, caller, a.id)
    return {"revoked": a.id}


@_op("restrictions", "list")
async def _restrictions_list(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return [
        restrictions.rule_view(r, gw.catalog.tools)
        for r in await restrictions.list_restrictions(gw.policy, caller)
    ]


@_op("restrictions", "create")
async def _restrictions_create(gw: Gateway, caller: Principal, a: RestrictionsCreate) -> Any:
    rule = await restrictions.add_restriction(
        gw.store,
        effect=str(a.effect),
        target_kind=str(a.target_kind),
        target=str(a.target),
        connector=a.connector,
        account=a.account,
        tool=a.tool,
        actor=caller,
    )
    return restrictions.rule_view(rule, gw.catalog.tools)


@_op("restrictions", "delete")
async def _restrictions_delete(gw: Gateway, caller: Principal, a: Id) -> Any:
    await restrictions.remove_restriction(gw.store, a.id, caller)
    return {"deleted": a.id}


@_op("restrictions", "explain")
async def _restrictions_explain(gw: Gateway, caller: Principal, a: RestrictionsExplain) -> Any:
    return await restrictions.explain_restriction(gw, user=a.user, role=a.role, tool=a.tool, actor=caller)


@_op("frozen", "set")
async def _frozen_set(gw: Gateway, caller: Principal, a: FrozenSet) -> Any:
    try:
        value = json.loads(a.value)
    except (ValueError, RecursionError) as exc:
        raise InvalidArguments(
            "`value` must be JSON text", [{"pointer": "/value", "message": "not JSON text"}]
        ) from exc
    secret = await restrictions.set_frozen(
        gw,
        caller,
        a.account,
        a.tool,
        a.param,
        value,
        a.secret,
    )
    account, tool, param = a.account, a.tool, a.param
    status = restrictions.frozen_state(
        gw.catalog.tools, account, tool, param
    )  # waiting for the tool
    return {"frozen": f"{account}__{tool}.{param}", "secret": secret, "status": status}


@_op("frozen", "unset")
async def _frozen_unset(gw: Gateway, caller: Principal, a: FrozenUnset) -> Any:
    await restrictions.unset_frozen(gw, caller, a.account, a.tool, a.param)
    return {"unfrozen": f"{a.account}__{a.tool}.{a.param}"}


@_op("frozen", "list")
async def _frozen_list(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return await restrictions.list_frozen(gw, caller)


@_op("approvals", "set")
async def _approvals_set(gw: Gateway, caller: Principal, a: ApprovalsSet) -> Any:
    rules = await approvals.set_approval_rule(
        gw,
        a.risk,
        account=a.account,
        role=a.role,
        required=bool(a.required if a.required is not None else True),
        actor=caller,
    )
    return [approvals.rule_view(r) for r in rules]


@_op("approvals", "approve")
async def _approvals_approve(gw: Gateway, caller: Principal, a: Id) -> Any:
    return approvals.approval_view(await approvals.approve(gw.store, a.id, caller))


def _whole(value: Any) -> Any:
    """A count as JSON may spell it (``5.0`` is 5); anything else as it came, for the checks."""
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


@_op("limits", "set")
async def _limits_set(gw: Gateway, caller: Principal, a: LimitsSet) -> Any:
    rule = await rate_limits.set_limit(
        gw,
        caller,
        member=a.member,
        role=a.role,
        account=a.account,
        tool=a.tool,
        per_minute=_whole(a.per_minute),
        per_day=_whole(a.per_day),
    )
    return rate_limits.limit_view(rule)


@_op("limits", "list")
async def _limits_list(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return [rate_limits.limit_view(r) for r in await rate_limits.list_limits(gw.policy, caller)]


@_op("limits", "remove")
async def _limits_remove(gw: Gateway, caller: Principal, a: Id) -> Any:
    await rate_limits.remove_limit(gw, caller, a.id)
    return {"removed": a.id}


def _seconds(value: float | None) -> float | None:
    """A time bound as the store compares it: a float within +-1e15 s (JSON allows any size)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf if value > 0 else -math.inf
    return None if math.isnan(seconds) else min(max(seconds, -1e15), 1e15)


@_op("audit", "search")
async def _audit_search(gw: Gateway, caller: Principal, a: AuditSearch) -> Any:
    f = AuditFilter(
        member=a.member,
        account=a.account,
        operation=a.operation,
        outcome=a.outcome,
        since=_seconds(a.since),
        until=_seconds(a.until),
    )
    return await audit.search_audit(gw.store, caller, f)


@_op("results", "read")
async def _results_read(gw: Gateway, caller: Principal, a: ResultsRead) -> Any:
    return await results.read_result(
        gw,
        caller,
        a.result_id,
        int(a.offset if a.offset is not None else 0),
        int(a.length if a.length is not None else results.MAX_PAGE),
    )


@_op("tools", "diagnose")
async def _tools_diagnose(gw: Gateway, caller: Principal, a: Name) -> Any:
    return await diagnose.diagnose(gw, caller, a.name)


@_op("tools", "changes")
async def _tools_changes(gw: Gateway, caller: Principal, a: Account) -> Any:
    return await pins.list_changes(gw, caller, a.account)


@_op("tools", "accept")
async def _tools_accept(gw: Gateway, caller: Principal, a: ToolsAccept) -> Any:
    return await pins.accept_change(gw, caller, a.account, a.tool, a.sha256)


@_op("tools", "reject")
async def _tools_reject(gw: Gateway, caller: Principal, a: ToolsReject) -> Any:
    return await pins.reject_change(gw, caller, a.account, a.tool)


@_op("search", "examples")
async def _search_examples(gw: Gateway, caller: Principal, a: NoArguments) -> Any:
    return await learning.example_counts(gw, caller)


@_op("search", "forget")
async def _search_forget(gw: Gateway, caller: Principal, a: SearchForget) -> Any:
    return await learning.forget_examples(gw, caller, a.tool)


@_op("prompts", "list")
async def _prompts_list(gw: Gateway, caller: Principal, a: OfferingsList) -> Any:
    return await offerings.list_for(
        gw, caller, "prompts", account=a.account, cursor=a.cursor, member=a.member
    )


@_op("resources", "list")
async def _resources_list(gw: Gateway, caller: Principal, a: OfferingsList) -> Any:
    return await offerings.list_for(
        gw, caller, "resources", account=a.account, cursor=a.cursor, member=a.member
    )


@_op("resources", "list_templates")
async def _resources_list_templates(gw: Gateway, caller: Principal, a: OfferingsList) -> Any:
    return await offerings.list_for(
        gw, caller, "resources/templates", account=a.account, cursor=a.cursor, member=a.member
    )


@_op("resources", "read")
async def _resources_read(gw: Gateway, caller: Principal, a: ResourcesRead) -> Any:
    return await offerings.read_for(gw, caller, a.uri, member=a.member)


OPERATIONS: tuple[Operation, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Operation))
_BY_KEY = {(o.resource, o.operation): o for o in OPERATIONS}


def _signature(op: Operation) -> str:
    """``operation(required,optional?)``: an operation's inputs in a few bytes."""
    props = op.input_schema.get("properties", {})
    required = set(op.input_schema.get("required", ()))
    args = ",".join(p if p in required else p + "?" for p in props)
    return f"{op.operation}({args})" if args else op.operation


def _signatures(ops: list[Operation]) -> str:
    """Every operation's signature, grouped by resource (``members: list invite(name,role) ...``):
    the enum of the one tool names each ``resource__operation`` already, so the resource is said
    once per group, which keeps an owner's listing within R-10.2's 3,000 bytes."""
    groups: dict[str, list[str]] = {}
    for op in ops:
        groups.setdefault(op.resource, []).append(_signature(op))
    return "; ".join(f"{resource}: {' '.join(found)}" for resource, found in groups.items())


def _admin_annotations(ops: list[Operation]) -> dict[str, bool]:
    """The loosest hint of the operations behind the one tool: read-only only if all of them are."""
    classes = {classify_operation(o.operation) for o in ops}
    if classes == {"read"}:
        return _HINTS["read"]
    return _HINTS["destructive" if "destructive" in classes else "write"]


def _permission(principal: Principal, op: Operation) -> str:
    """The operation's permission for this caller (one's own grants need only ``tool:execute``)."""
    return permission_of(role_permissions(principal.role), op.resource, op.operation)


class ControlPlane:
    """The registry the MCP face lists and dispatches.

    ``admin_surface`` ``individual`` lists each operation as its own tool (R-10.1); ``single``
    lists the ones the caller may use behind one ``{prefix}__admin`` tool (R-10.2's setting), whose
    ``operation`` is ``resource__operation`` and whose ``arguments`` are validated by that
    operation's own ``inputSchema``."""

    def __init__(self, gw: Gateway) -> None:
        prefix = gw.settings.control_prefix
        self._gw = gw
        self._ops = {f"{prefix}__{o.resource}__{o.operation}": o for o in OPERATIONS}
        self._admin = f"{prefix}__admin"
        self._single = gw.settings.admin_surface == "single"

    def has(self, name: str) -> bool:
        return name in self._ops or (self._single and name == self._admin)

    def all_operations(self) -> list[tuple[str, Operation]]:
        """Every operation with its listed name, for the REST face and its OpenAPI document."""
        return list(self._ops.items())

    def _usable(self, principal: Principal) -> list[tuple[str, Operation]]:
        return [
            (name, op)
            for name, op in self._ops.items()
            if op.over_mcp and can_use_operation(principal, _permission(principal, op), op.operation)
        ]

    def definitions_for(self, principal: Principal) -> list[dict[str, Any]]:
        usable = self._usable(principal)
        if not self._single:
            return [op.definition(name) for name, op in usable]
        if not usable:
            return []
        keys = [f"{op.resource}__{op.operation}" for _, op in usable]
        signatures = _signatures([op for _, op in usable])
        schema = {
            "type": "object",
            "properties": {"operation": {"enum": keys}, "arguments": {"type": "object"}},
            "required": ["operation"],
        }
        return [
            {
                "name": self._admin,
                "description": "Admin operation (resource__operation) with its arguments (?: optional): "
                + signatures,
                "inputSchema": schema,
                "annotations": _admin_annotations([op for _, op in usable]),
            }
        ]

    def _unwrap(self, arguments: object) -> tuple[str, object]:
        """The operation's listed name and its arguments from a ``{prefix}__admin`` call."""
        keys = [f"{o.resource}__{o.operation}" for o in OPERATIONS if o.over_mcp]
        schema = {
            "type": "object",
            "properties": {"operation": {"enum": keys}, "arguments": {"type": "object"}},
            "required": ["operation"],
        }
        checked = validate_input(schema, arguments)
        prefix = self._admin.removesuffix("__admin")
        return f"{prefix}__{checked['operation']}", checked.get("arguments", {})

    async def call(
        self, principal: Principal, name: str, arguments: object, *, over_mcp: bool = True
    ) -> dict[str, Any]:
        """Run one operation. Over MCP, ``tool:execute`` gates the whole endpoint first (R-7.2); the
        REST face (``over_mcp=False``) asks only the operation's own permission and scope. The
        arguments are validated by the operation's ``inputSchema`` before its handler runs."""
        if over_mcp:
            require_execute(principal)
        nested = self._single and name == self._admin
        if nested:
            name, arguments = self._unwrap(arguments)
        op = self._ops.get(name)
        if op is None or (over_mcp and not op.over_mcp):  # MCP has prompts/list etc. of its own
            raise NotFound(f"no operation {name!r}")
        require_operation(principal, _permission(principal, op), op.operation)
        try:
            checked = validate_input(op.input_schema, arguments)
        except InvalidArguments as exc:
            if not nested:
                raise
            raise InvalidArguments(
                exc.message,
                [{**e, "pointer": "/arguments" + (e.get("pointer") or "")} for e in exc.errors],
                exc.accepted,
            ) from exc
        if classify_operation(op.operation) != "read":  # a write spends from the caller's limits
            await rate_limits.check_write(self._gw, principal)
        # The model is built from what the schema accepted, as it came: no coercion, so every value
        # reaches the gateway's own checks exactly as before the models (a count of 5.0, a huge
        # time bound), and each face gets the same answer for the same input.
        typed = op.arguments.model_construct(**checked)
        return {"result": await op.handler(self._gw, principal, typed)}
