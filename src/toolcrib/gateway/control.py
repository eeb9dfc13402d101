"""Control-plane operations ``{prefix}__{resource}__{operation}`` (SPEC section 10).

Each operation names its permission (``policy.operations``) and is classified by its own verb
(read/write/destructive, R-7.3), which its annotations state (R-10.2); ``tools/list`` shows exactly
the ones the caller may use. Its ``inputSchema``, derived from the operation's typed argument model
in :mod:`toolcrib.operations` (#33), is the one :func:`validate_input` checks on every face before
the handler runs. MCP, REST, the console and the command ``toolcrib {resource} {operation}`` all
dispatch through :class:`ControlPlane`.
"""

from __future__ import annotations

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
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery import diagnose, learning
from toolcrib.gateway.governance import approvals, rate_limits, restrictions
from toolcrib.gateway.identity import grants, members
from toolcrib.gateway.inputs import validate_input
from toolcrib.gateway.operation_input import check_operation_input
from toolcrib.operations import input_schema, spec
from toolcrib.policy.classify import classify_operation
from toolcrib.policy.gates import Principal, can_use_operation, require_execute, require_operation
from toolcrib.policy.operations import permission_of
from toolcrib.policy.roles import role_permissions
from toolcrib.store.audit import AuditFilter

__all__ = ["ControlPlane", "Operation", "check_operation_input"]

Handler = Callable[[Gateway, Principal, dict[str, Any]], Awaitable[Any]]

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
        return Operation(resource, operation, described.description, schema, handler)

    return wrap


def _conn_views(rows: list[Any]) -> list[dict[str, Any]]:
    return [connections.connection_view(r) for r in rows]


@_op("connections", "list")
async def _connections_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return _conn_views(await connections.list_connections(gw, caller))


@_op("connections", "get")
async def _connections_get(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return connections.connection_view(await connections.get_connection(gw, arguments["name"], caller))


@_op("connections", "create")
async def _connections_create(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    client = {k: arguments.get(k) for k in ("client_id", "client_secret", "scope", "per_member")}
    row = await connections.add_connection(
        gw,
        arguments["name"],
        connector=arguments["connector"],
        command=arguments.get("command"),
        url=arguments.get("url"),
        oauth=connections.oauth_option(arguments.get("oauth"), client),
        actor=caller,
        pinning=arguments.get("pinning", "accept"),
    )
    return connections.connection_view(row)


@_op("connections", "update")
async def _connections_update(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return connections.connection_view(
        await connections.update_connection(
            gw, arguments["name"], connector=arguments["connector"], actor=caller
        )
    )


@_op("connections", "delete")
async def _connections_delete(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await connections.remove_connection(gw, arguments["name"], caller)
    return {"removed": arguments["name"]}


@_op("connections", "refresh")
async def _connections_refresh(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return connections.connection_view(await connections.refresh_connection(gw, arguments["name"], caller))


@_op("members", "list")
async def _members_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return [members.member_view(m) for m in await members.list_members(gw, caller)]


@_op("members", "invite")
async def _members_invite(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return members.member_view(await members.add_member(gw, arguments["name"], arguments["role"], caller))


@_op("members", "update_role")
async def _members_update_role(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    pinned = arguments.get("pinned", True) is not False
    await members.set_role(gw, arguments["name"], arguments["role"], caller, pinned=pinned)
    return {"name": arguments["name"], "role": arguments["role"], "pinned": pinned}


@_op("members", "suspend")
async def _members_suspend(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await members.suspend_member(gw, arguments["name"], caller)
    return {"suspended": arguments["name"]}


@_op("members", "remove")
async def _members_remove(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await members.remove_member(gw, arguments["name"], caller)
    return {"removed": arguments["name"]}


@_op("grants", "list")
async def _grants_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await grants.list_grants(gw, caller, arguments.get("member"))


@_op("grants", "create")
async def _grants_create(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    grant, token = await members.create_token(
        gw, arguments["member"], arguments.get("scopes") or members.DEFAULT_SCOPES, actor=caller
    )
    return {"id": grant.id, "token": token}


@_op("grants", "revoke")
async def _grants_revoke(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await grants.revoke_grant(gw, caller, arguments["id"])
    return {"revoked": arguments["id"]}


@_op("restrictions", "list")
async def _restrictions_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return [restrictions.rule_view(r, gw.catalogs) for r in await restrictions.list_restrictions(gw, caller)]


@_op("restrictions", "create")
async def _restrictions_create(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    rule = await restrictions.add_restriction(
        gw,
        effect=str(arguments["effect"]),
        target_kind=str(arguments["target_kind"]),
        target=str(arguments["target"]),
        connector=arguments.get("connector"),
        account=arguments.get("account"),
        tool=arguments.get("tool"),
        actor=caller,
    )
    return restrictions.rule_view(rule, gw.catalogs)


@_op("restrictions", "delete")
async def _restrictions_delete(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await restrictions.remove_restriction(gw, arguments["id"], caller)
    return {"deleted": arguments["id"]}


@_op("restrictions", "explain")
async def _restrictions_explain(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await restrictions.explain_restriction(
        gw, user=arguments.get("user"), role=arguments.get("role"), tool=arguments["tool"], actor=caller
    )


@_op("frozen", "set")
async def _frozen_set(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    try:
        value = json.loads(arguments["value"])
    except (ValueError, RecursionError) as exc:
        raise InvalidArguments(
            "`value` must be JSON text", [{"pointer": "/value", "message": "not JSON text"}]
        ) from exc
    secret = await restrictions.set_frozen(
        gw,
        caller,
        arguments["account"],
        arguments["tool"],
        arguments["param"],
        value,
        arguments.get("secret"),
    )
    account, tool, param = arguments["account"], arguments["tool"], arguments["param"]
    status = restrictions.frozen_state(gw.catalogs, account, tool, param)  # waiting for the tool
    return {"frozen": f"{account}__{tool}.{param}", "secret": secret, "status": status}


@_op("frozen", "unset")
async def _frozen_unset(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await restrictions.unset_frozen(gw, caller, arguments["account"], arguments["tool"], arguments["param"])
    return {"unfrozen": f"{arguments['account']}__{arguments['tool']}.{arguments['param']}"}


@_op("frozen", "list")
async def _frozen_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await restrictions.list_frozen(gw, caller)


@_op("approvals", "set")
async def _approvals_set(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    rules = await approvals.set_approval_rule(
        gw,
        arguments["risk"],
        account=arguments.get("account"),
        role=arguments.get("role"),
        required=bool(arguments.get("required", True)),
        actor=caller,
    )
    return [approvals.rule_view(r) for r in rules]


@_op("approvals", "approve")
async def _approvals_approve(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return approvals.approval_view(await approvals.approve(gw, arguments["id"], caller))


def _whole(value: Any) -> Any:
    """A count as JSON may spell it (``5.0`` is 5); anything else as it came, for the checks."""
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


@_op("limits", "set")
async def _limits_set(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    rule = await rate_limits.set_limit(
        gw,
        caller,
        member=arguments.get("member"),
        role=arguments.get("role"),
        account=arguments.get("account"),
        tool=arguments.get("tool"),
        per_minute=_whole(arguments.get("per_minute")),
        per_day=_whole(arguments.get("per_day")),
    )
    return rate_limits.limit_view(rule)


@_op("limits", "list")
async def _limits_list(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return [rate_limits.limit_view(r) for r in await rate_limits.list_limits(gw, caller)]


@_op("limits", "remove")
async def _limits_remove(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    await rate_limits.remove_limit(gw, caller, arguments["id"])
    return {"removed": arguments["id"]}


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
async def _audit_search(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    f = AuditFilter(
        member=arguments.get("member"),
        account=arguments.get("account"),
        operation=arguments.get("operation"),
        outcome=arguments.get("outcome"),
        since=_seconds(arguments.get("since")),
        until=_seconds(arguments.get("until")),
    )
    return await audit.search_audit(gw, caller, f)


@_op("results", "read")
async def _results_read(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await results.read_result(
        gw,
        caller,
        arguments["result_id"],
        int(arguments.get("offset", 0)),
        int(arguments.get("length", results.MAX_PAGE)),
    )


@_op("tools", "diagnose")
async def _tools_diagnose(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await diagnose.diagnose(gw, caller, arguments["name"])


@_op("tools", "changes")
async def _tools_changes(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await pins.list_changes(gw, caller, arguments.get("account"))


@_op("tools", "accept")
async def _tools_accept(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await pins.accept_change(
        gw, caller, arguments["account"], arguments["tool"], arguments.get("sha256")
    )


@_op("tools", "reject")
async def _tools_reject(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await pins.reject_change(gw, caller, arguments["account"], arguments["tool"])


@_op("search", "examples")
async def _search_examples(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await learning.example_counts(gw, caller)


@_op("search", "forget")
async def _search_forget(gw: Gateway, caller: Principal, arguments: dict[str, Any]) -> Any:
    return await learning.forget_examples(gw, caller, arguments.get("tool"))


OPERATIONS: tuple[Operation, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Operation))
_BY_KEY = {(o.resource, o.operation): o for o in OPERATIONS}


def _signature(key: str, op: Operation) -> str:
    """``resource__operation(required,optional?)``: an operation's inputs in a few bytes."""
    props = op.input_schema.get("properties", {})
    required = set(op.input_schema.get("required", ()))
    args = ",".join(p if p in required else p + "?" for p in props)
    return f"{key}({args})" if args else key


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
            if can_use_operation(principal, _permission(principal, op), op.operation)
        ]

    def definitions_for(self, principal: Principal) -> list[dict[str, Any]]:
        usable = self._usable(principal)
        if not self._single:
            return [op.definition(name) for name, op in usable]
        if not usable:
            return []
        keys = [f"{op.resource}__{op.operation}" for _, op in usable]
        signatures = " ".join(_signature(k, op) for k, (_, op) in zip(keys, usable, strict=True))
        schema = {
            "type": "object",
            "properties": {"operation": {"enum": keys}, "arguments": {"type": "object"}},
            "required": ["operation"],
        }
        return [
            {
                "name": self._admin,
                "description": f"Admin operation with its arguments (?: optional): {signatures}",
                "inputSchema": schema,
                "annotations": _admin_annotations([op for _, op in usable]),
            }
        ]

    def _unwrap(self, arguments: object) -> tuple[str, object]:
        """The operation's listed name and its arguments from a ``{prefix}__admin`` call."""
        keys = [f"{o.resource}__{o.operation}" for o in OPERATIONS]
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
        if op is None:
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
        return {"result": await op.handler(self._gw, principal, checked)}
