"""Every control-plane operation as the command ``toolcrib {resource} {operation}`` (#33).

The commands are built from the one table (:mod:`toolcrib.operations`): one per operation
that no hand-written command already answers under its own name, its options from the operation's
argument model (``--name``; a boolean as ``--flag/--no-flag``; an argv as a repeated option, one
word each, or one shell-quoted string). It runs :meth:`ControlPlane.call` as the host's operator,
through the same permission check, ``inputSchema`` validation and rate limits as the REST face,
and prints the result (``--json`` for scripts). The table's module imports pydantic only: the
gateway loads when a command runs, never at ``toolcrib --help``; and the table itself loads only
when a group is asked for a command it does not hold by hand (:mod:`toolcrib.cli.lazy`).

Today's hand-written names stay as aliases (:data:`ALIASES`, listed in the README).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, call_operation, emit, fail
from toolcrib.errors import InBandError

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

    from toolcrib.operations import OperationSpec

__all__ = ["ALIASES", "flag_of", "mark_aliases", "operation_commands", "table_resources"]

ALIASES: dict[str, str] = {
    "connections add": "connections create",
    "connections remove": "connections delete",
    "members add": "members invite",
    "members set-role": "members update_role",
    "restrictions add": "restrictions create",
    "restrictions remove": "restrictions delete",
    "tokens create": "grants create",
    "tokens revoke": "grants revoke",
}
"""Hand-written command -> the operation's own command it is an alias of (same gateway call)."""

_PYTHON = {"string": str, "integer": int, "number": float}


def flag_of(field: str) -> str:
    """The option of an argument: ``result_id`` is ``--result-id``."""
    return "--" + field.replace("_", "-")


def _parameter(name: str, annotation: Any, required: bool) -> inspect.Parameter:
    from toolcrib.operations import field_kind

    kind, flag = field_kind(annotation), flag_of(name)
    hint: Any
    if kind == "boolean":
        hint, option = bool | None, typer.Option(None, f"{flag}/--no-{flag[2:]}")
    elif kind == "argv":
        help_text = "One shell-quoted command line, or repeated: one word each."
        hint, option = list[str] | None, typer.Option(None, flag, help=help_text)
    elif required:
        hint, option = _PYTHON[kind], typer.Option(..., flag)
    else:
        hint, option = _PYTHON[kind] | None, typer.Option(None, flag)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=hint)


def _arguments(values: dict[str, Any]) -> dict[str, Any]:
    """The options given, as the operation's JSON arguments (one argv word is the command line)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = value[0] if isinstance(value, list) and len(value) == 1 else value
    return out


def _run(described: OperationSpec, database: str | None, as_json: bool, values: dict[str, Any]) -> None:
    from toolcrib.gateway.operation_input import check_operation_input

    arguments = _arguments(values)
    try:
        check_operation_input(described.resource, described.operation, arguments)
    except InBandError as exc:
        fail(exc)
    emit(call_operation(database, described.key, arguments), as_json)


def _command(described: OperationSpec) -> Callable[..., None]:
    fields = described.arguments.model_fields
    params = [_parameter(n, f.annotation, f.is_required()) for n, f in fields.items()]

    def command(database: str | None = None, as_json: bool = False, **values: Any) -> None:
        _run(described, database, as_json, values)

    params += [
        inspect.Parameter(
            "database", inspect.Parameter.KEYWORD_ONLY, default=DatabaseOption, annotation=str | None
        ),
        inspect.Parameter("as_json", inspect.Parameter.KEYWORD_ONLY, default=JsonOption, annotation=bool),
    ]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = f"{described.description} (the operation {described.key})"
    return command


def table_resources() -> list[str]:
    """Each resource of the operation table, in its order."""
    from toolcrib.operations import OPERATION_SPECS

    return list(dict.fromkeys(described.resource for described in OPERATION_SPECS))


def operation_commands(
    resource: str, hand_written: Collection[str]
) -> Iterator[tuple[str, Callable[..., None]]]:
    """The command of each operation of ``resource`` that no hand-written command names."""
    from toolcrib.operations import OPERATION_SPECS

    for described in OPERATION_SPECS:
        if described.resource == resource and described.operation not in hand_written:
            yield described.operation, _command(described)


def mark_aliases(resource: str, group: typer.Typer) -> None:
    """Each alias's ``--help`` names the operation's own command."""
    for alias, target in ALIASES.items():
        of, name = alias.split()
        for info in group.registered_commands if of == resource else ():
            if info.name == name and info.callback is not None and info.help is None:
                info.help = f"{inspect.getdoc(info.callback)}\n\nAn alias of `toolcrib {target}`."
