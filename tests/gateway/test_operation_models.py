"""Each control-plane operation's ``inputSchema`` is derived from its typed argument model (#33)
and validates exactly what the hand-written schemas did: the same properties, types, order and
required fields, no pydantic titles (R-10.2)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from toolcrib.gateway.control import OPERATIONS, _op
from toolcrib.operations import OPERATION_SPECS, input_schema, spec

BEFORE = {
    "connections__list": ("", ""),
    "connections__get": ("name", "name"),
    "connections__create": (  # #35: connector optional when from_registry names the entry
        "name connector from_registry inputs:argv command:argv url oauth:boolean per_member:boolean"
        " client_id client_secret scope pinning",
        "name",
    ),
    "connections__update": ("name connector", "name connector"),
    "connections__delete": ("name", "name"),
    "connections__refresh": ("name", "name"),
    "connectors__search": ("words", "words"),
    "connectors__show": ("name", "name"),
    "connectors__updates": ("", ""),
    "connectors__upgrade": ("name version inputs:argv", "name"),
    "members__list": ("", ""),
    "members__invite": ("name role", "name role"),
    "members__update_role": ("name role pinned:boolean", "name role"),
    "members__suspend": ("name", "name"),
    "members__remove": ("name", "name"),
    "grants__list": ("member", ""),
    "grants__create": ("member scopes", "member"),
    "grants__revoke": ("id", "id"),
    "restrictions__list": ("", ""),
    "restrictions__create": ("effect target_kind target connector account tool", "effect target_kind target"),
    "restrictions__delete": ("id", "id"),
    "restrictions__explain": ("user role tool", "tool"),
    "frozen__set": ("account tool param value secret:boolean", "account tool param value"),
    "frozen__unset": ("account tool param", "account tool param"),
    "frozen__list": ("", ""),
    "approvals__set": ("risk account role required:boolean", "risk"),
    "approvals__approve": ("id", "id"),
    "limits__set": ("member role account tool per_minute:integer per_day:integer", ""),
    "limits__list": ("", ""),
    "limits__remove": ("id", "id"),
    "audit__search": ("member account operation outcome since:number until:number", ""),
    "results__read": ("result_id offset:integer length:integer", "result_id"),
    "tools__diagnose": ("name", "name"),
    "tools__changes": ("account", ""),
    "tools__accept": ("account tool sha256", "account tool"),
    "tools__reject": ("account tool", "account tool"),
    "search__examples": ("", ""),
    "search__forget": ("tool", ""),
    "prompts__list": ("account cursor member", ""),
    "resources__list": ("account cursor member", ""),
    "resources__list_templates": ("account cursor member", ""),
    "resources__read": ("uri member", "uri"),
}
"""The props strings the schemas were written as before the models ("name:kind", string by default)."""


def _written(props: str, required: str) -> dict[str, Any]:
    """The schema the old ``_op(..., props, required)`` built."""
    argv = {"type": ["string", "array"], "items": {"type": "string"}}
    properties: dict[str, Any] = {}
    for prop in props.split():
        name, _, kind = prop.partition(":")
        properties[name] = argv if kind == "argv" else {"type": kind or "string"}
    schema: dict[str, Any] = {"type": "object"}
    if properties:
        schema["properties"] = properties
    if required:
        schema["required"] = required.split()
    return schema


def test_r10_2_every_operation_schema_is_the_one_written_before_from_its_model() -> None:
    assert [s.key for s in OPERATION_SPECS] == list(BEFORE)
    for described in OPERATION_SPECS:
        assert input_schema(described.arguments) == _written(*BEFORE[described.key]), described.key
    for op in OPERATIONS:
        assert op.input_schema == _written(*BEFORE[f"{op.resource}__{op.operation}"])
        assert "title" not in repr(op.input_schema)


def test_r10_2_each_handler_takes_its_operations_typed_model_and_a_dict_handler_is_refused() -> None:
    for op in OPERATIONS:
        assert op.arguments is spec(op.resource, op.operation).arguments
        taken = list(inspect.signature(op.handler).parameters.values())[2].annotation
        assert taken == op.arguments.__name__, op.handler.__name__

    async def takes_a_dict(gw: Any, caller: Any, arguments: dict[str, Any]) -> Any:
        return arguments["name"]

    with pytest.raises(TypeError, match="must take Name"):
        _op("connections", "get")(takes_a_dict)
