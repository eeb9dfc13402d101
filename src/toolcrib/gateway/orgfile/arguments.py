"""Each object of an organization file as the arguments of the operation that makes it (#33).

A member is what ``members invite`` takes, a restriction what ``restrictions create`` takes, and so
on: :func:`operation_arguments` says which operation and with what arguments, and
:func:`check_as_operation` validates them by that operation's ``inputSchema``, the one derived from
its typed model in :mod:`toolcrib.operations` that every face checks. So the file cannot hold what
the operation would refuse by shape, and a field added to one without the other fails
``tests/gateway/test_orgfile_operations.py``. The rules beyond shape are the gateway's own
validators, which :mod:`.checks` runs next (the same ones each operation's handler reaches).
Classifications have no operation on the control plane (``toolcrib tools classify`` is a command of
its own), so they are checked by their model alone; a connection's ``env`` and ``headers`` are the
file's (and the command line's) own: ``connections create`` on MCP and REST takes no secrets.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from toolcrib.gateway.operation_input import check_operation_input
from toolcrib.gateway.orgfile.models import (
    ApprovalSpec,
    ConnectionSpec,
    FrozenSpec,
    LimitSpec,
    MemberSpec,
    RestrictionSpec,
)

__all__ = ["SECTION_OPERATIONS", "check_as_operation", "operation_arguments"]

SECTION_OPERATIONS: dict[str, tuple[str, str]] = {
    "connections": ("connections", "create"),
    "members": ("members", "invite"),
    "restrictions": ("restrictions", "create"),
    "frozen": ("frozen", "set"),
    "approvals": ("approvals", "set"),
    "limits": ("limits", "set"),
}
"""A file section -> the operation ``(resource, operation)`` that makes each of its objects."""


def operation_arguments(item: BaseModel) -> dict[str, Any]:
    """``item``'s fields as its operation's arguments (absent ones left out)."""
    if isinstance(item, ConnectionSpec):
        return _connection(item)
    if isinstance(item, RestrictionSpec):
        kind, target = ("role", item.role) if item.role is not None else ("user", item.user)
        fields = {"effect": item.effect, "target_kind": kind, "target": target}
        fields |= {"connector": item.connector, "account": item.account, "tool": item.tool}
        return _present(fields)
    if isinstance(item, FrozenSpec):
        fields = {"account": item.account, "tool": item.tool, "param": item.parameter}
        return _present(fields | {"value": json.dumps(item.value), "secret": item.secret})
    if isinstance(item, MemberSpec | ApprovalSpec | LimitSpec):
        return _present(item.model_dump())
    raise TypeError(f"no operation makes a {type(item).__name__}")


def check_as_operation(section: str, item: BaseModel) -> None:
    """Validate ``item`` as its operation's arguments (``InvalidArguments`` names the fields)."""
    check_operation_input(*SECTION_OPERATIONS[section], operation_arguments(item))


def _connection(c: ConnectionSpec) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "name": c.name,
        "connector": c.connector,
        "from_registry": c.from_registry,
        "command": c.command,
        "url": c.url,
        "pinning": c.pinning,
        "inputs": [f"{k}={v}" for k, v in c.inputs.items()] or None,
    }
    if c.oauth is not None and c.oauth is not False:
        fields["oauth"] = True
        if not isinstance(c.oauth, bool):
            fields |= c.oauth.model_dump()
    return _present(fields)


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}
