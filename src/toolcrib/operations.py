"""The control plane's operations as data: each one's resource, operation, description and typed
argument model (#33). Every face derives from this one table: the MCP ``inputSchema`` and the
REST schema (:func:`input_schema`), the command ``toolcrib {resource} {operation}`` and its
options (``toolcrib.cli.operations``); :mod:`toolcrib.gateway.control` pairs each with its handler.

It sits beside ``errors`` and imports pydantic only, so that building the command line
(``toolcrib --help``) loads no gateway module (#13). The schemas stay compact (no titles, no
``anyOf`` for an optional field): an owner's whole ``tools/list`` fits in 3,000 bytes (R-10.2).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict

__all__ = ["OPERATION_SPECS", "Arguments", "Argv", "OperationSpec", "field_kind", "input_schema", "spec"]

Argv = str | list[str]
"""A command line: one shell-quoted string, or its words."""

_ARGV = {"type": ["string", "array"], "items": {"type": "string"}}
_KINDS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class Arguments(BaseModel):
    """An operation's arguments; a field without a default is required."""

    model_config = ConfigDict(frozen=True)


class NoArguments(Arguments):
    pass


class Name(Arguments):
    name: str


class Id(Arguments):
    id: str


class ConnectionsCreate(Arguments):
    name: str
    connector: str | None = None
    from_registry: str | None = None
    inputs: Argv | None = None
    command: Argv | None = None
    url: str | None = None
    oauth: bool | None = None
    per_member: bool | None = None
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    pinning: str | None = None


class ConnectorsSearch(Arguments):
    words: str


class ConnectorsUpgrade(Arguments):
    name: str
    version: str | None = None
    inputs: Argv | None = None


class ConnectionsUpdate(Arguments):
    name: str
    connector: str


class MembersInvite(Arguments):
    name: str
    role: str


class MembersUpdateRole(Arguments):
    name: str
    role: str
    pinned: bool | None = None


class GrantsList(Arguments):
    member: str | None = None


class GrantsCreate(Arguments):
    member: str
    scopes: str | None = None


class RestrictionsCreate(Arguments):
    effect: str
    target_kind: str
    target: str
    connector: str | None = None
    account: str | None = None
    tool: str | None = None


class RestrictionsExplain(Arguments):
    user: str | None = None
    role: str | None = None
    tool: str


class FrozenSet(Arguments):
    account: str
    tool: str
    param: str
    value: str
    secret: bool | None = None


class FrozenUnset(Arguments):
    account: str
    tool: str
    param: str


class ApprovalsSet(Arguments):
    risk: str
    account: str | None = None
    role: str | None = None
    required: bool | None = None


class LimitsSet(Arguments):
    member: str | None = None
    role: str | None = None
    account: str | None = None
    tool: str | None = None
    per_minute: int | None = None
    per_day: int | None = None


class AuditSearch(Arguments):
    member: str | None = None
    account: str | None = None
    operation: str | None = None
    outcome: str | None = None
    since: float | None = None
    until: float | None = None


class ResultsRead(Arguments):
    result_id: str
    offset: int | None = None
    length: int | None = None


class Account(Arguments):
    account: str | None = None


class ToolsAccept(Arguments):
    account: str
    tool: str
    sha256: str | None = None


class ToolsReject(Arguments):
    account: str
    tool: str


class SearchForget(Arguments):
    tool: str | None = None


class OfferingsList(Arguments):
    account: str | None = None
    cursor: str | None = None
    member: str | None = None


class ResourcesRead(Arguments):
    uri: str
    member: str | None = None


@dataclass(frozen=True, slots=True)
class OperationSpec:
    """One operation as every face names it: ``{prefix}__{resource}__{operation}``."""

    resource: str
    operation: str
    description: str
    arguments: type[Arguments]
    over_mcp: bool = True
    """Listed and called as a control-plane tool over MCP. The prompt and resource operations are
    not: an MCP client has the protocol's own methods for them (``prompts/list``, ...), and
    ``tools/list`` stays as it was (R-2.2, R-10.2)."""

    @property
    def key(self) -> str:
        return f"{self.resource}__{self.operation}"


def _specs(
    *rows: tuple[str, str, str, type[Arguments]] | tuple[str, str, str, type[Arguments], bool],
) -> tuple[OperationSpec, ...]:
    return tuple(OperationSpec(*row) for row in rows)


OPERATION_SPECS = _specs(
    ("connections", "list", "List connections.", NoArguments),
    ("connections", "get", "One connection.", Name),
    (
        "connections",
        "create",
        "Connect an MCP server (command, url, or from_registry NAME[@VERSION] with inputs KEY=VALUE);"
        " oauth answers an authorize_url.",
        ConnectionsCreate,
    ),
    ("connections", "update", "Relabel a connection.", ConnectionsUpdate),
    ("connections", "delete", "Remove a connection.", Name),
    ("connections", "refresh", "Re-read its tools.", Name),
    ("connectors", "search", "Find servers in the MCP registries (R-13.9).", ConnectorsSearch),
    ("connectors", "show", "A registry entry NAME[@VERSION]: what it needs.", Name),
    ("connectors", "updates", "Connections whose registry entry is newer.", NoArguments),
    ("connectors", "upgrade", "Move a connection to a registry version.", ConnectorsUpgrade),
    ("members", "list", "List members.", NoArguments),
    ("members", "invite", "Add a member.", MembersInvite),
    ("members", "update_role", "Change role (pinned unless pinned=false).", MembersUpdateRole),
    ("members", "suspend", "Suspend a member.", Name),
    ("members", "remove", "Remove a member.", Name),
    ("grants", "list", "List grants.", GrantsList),
    ("grants", "create", "New access token.", GrantsCreate),
    ("grants", "revoke", "Revoke a grant.", Id),
    ("restrictions", "list", "List rules.", NoArguments),
    (
        "restrictions",
        "create",
        "Add allow/block rule (tool names prompts/resources too).",
        RestrictionsCreate,
    ),
    ("restrictions", "delete", "Delete a rule.", Id),
    ("restrictions", "explain", "Rules deciding a tool.", RestrictionsExplain),
    ("frozen", "set", "Freeze a param (JSON).", FrozenSet),
    ("frozen", "unset", "Unfreeze a param.", FrozenUnset),
    ("frozen", "list", "Frozen params.", NoArguments),
    ("approvals", "set", "Require approval for a risk.", ApprovalsSet),
    ("approvals", "approve", "Approve a held call.", Id),
    ("limits", "set", "Rate limit calls (R-7.10).", LimitsSet),
    ("limits", "list", "List rate limits.", NoArguments),
    ("limits", "remove", "Remove a rate limit.", Id),
    ("audit", "search", "Audit trail; since/until: Unix s.", AuditSearch),
    ("results", "read", "Page a stored result.", ResultsRead),
    ("tools", "diagnose", "Why a tool is missing.", Name),
    ("tools", "changes", "Held tool changes, diffed.", Account),
    ("tools", "accept", "Accept a change.", ToolsAccept),
    ("tools", "reject", "Keep it held.", ToolsReject),
    ("search", "examples", "Learned searches per tool.", NoArguments),
    ("search", "forget", "Forget learned searches.", SearchForget),
    (
        "prompts",
        "list",
        "Prompts of connections ({account}__{prompt}); member: as whom.",
        OfferingsList,
        False,
    ),
    ("resources", "list", "Resources of connections (gateway URIs); member: as whom.", OfferingsList, False),
    (
        "resources",
        "list_templates",
        "Resource templates of connections; member: as whom.",
        OfferingsList,
        False,
    ),
    ("resources", "read", "Read a resource by its gateway URI; member: as whom.", ResourcesRead, False),
)
_BY_KEY = {s.key: s for s in OPERATION_SPECS}


def spec(resource: str, operation: str) -> OperationSpec:
    """The operation ``resource__operation`` (KeyError for an unknown one)."""
    return _BY_KEY[f"{resource}__{operation}"]


def field_kind(annotation: Any) -> str:
    """A field's JSON kind: ``string``, ``integer``, ``number``, ``boolean`` or ``argv``."""
    kinds = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) not in (Union, types.UnionType):
        kinds = [annotation]
    if any(get_origin(k) is list for k in kinds):
        return "argv"
    (kind,) = kinds
    return _KINDS[kind]


def input_schema(model: type[Arguments]) -> dict[str, Any]:
    """The operation's ``inputSchema``: each field's JSON type, the fields without a default required."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        kind = field_kind(field.annotation)
        properties[name] = dict(_ARGV) if kind == "argv" else {"type": kind}
        if field.is_required():
            required.append(name)
    schema: dict[str, Any] = {"type": "object"}
    if properties:
        schema["properties"] = properties
    if required:
        schema["required"] = required
    return schema
