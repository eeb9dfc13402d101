"""Rate-limit commands (R-7.10): ``toolcrib limits set / list / remove``.

They call the same gateway functions as the ``toolcrib__limits__*`` tools and the REST API, as the
host operator (``operator_principal``: the owner, every scope), and validate their arguments by
the same ``inputSchema`` first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, console, emit, fail, run_gateway, run_reading
from toolcrib.errors import InBandError

if TYPE_CHECKING:
    from toolcrib.gateway.core import Gateway
    from toolcrib.gateway.reading import Reading

__all__ = ["limits_app"]

limits_app = typer.Typer(no_args_is_help=True, help="Rate limits on calls and admin writes.")

_COLUMNS = ["id", "description"]


def _check(op: str, **arguments: Any) -> None:
    from toolcrib.gateway.operation_input import check_operation_input

    try:
        check_operation_input("limits", op, {k: v for k, v in arguments.items() if v is not None})
    except InBandError as exc:
        fail(exc)


@limits_app.command("set")
def limits_set(
    member: str | None = typer.Option(None, "--member", help="Only this member's calls."),
    role: str | None = typer.Option(None, "--role", help="Only calls by members of this role."),
    account: str | None = typer.Option(None, "--account", help="Only calls of this connection."),
    tool: str | None = typer.Option(None, "--tool", help="Only this tool of --account."),
    per_minute: int | None = typer.Option(None, "--per-minute", help="Calls per minute."),
    per_day: int | None = typer.Option(None, "--per-day", help="Calls per day."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Limit each member's calls (of every tool, of --account, or of its --tool; without either
    also their admin writes). Replaces a limit with the same member, role, account and tool."""
    from toolcrib.gateway.governance import rate_limits
    from toolcrib.gateway.identity import members

    fields = {"member": member, "role": role, "account": account, "tool": tool}
    _check("set", **fields, per_minute=per_minute, per_day=per_day)

    async def work(gw: Gateway) -> dict[str, Any]:
        operator = await members.operator_principal(gw.store)
        rule = await rate_limits.set_limit(gw, operator, **fields, per_minute=per_minute, per_day=per_day)
        return rate_limits.limit_view(rule)

    emit(run_gateway(database, work), as_json)


@limits_app.command("list")
def limits_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Every rate limit, in words."""
    from toolcrib.gateway.governance import rate_limits
    from toolcrib.gateway.identity import members

    async def work(reading: Reading) -> list[dict[str, Any]]:
        operator = await members.operator_principal(reading.store)
        return [rate_limits.limit_view(r) for r in await rate_limits.list_limits(reading.policy, operator)]

    emit(run_reading(database, work), as_json, columns=_COLUMNS)


@limits_app.command("remove")
def limits_remove(rule_id: str, database: str | None = DatabaseOption) -> None:
    """Remove a rate limit by its id."""
    from toolcrib.gateway.governance import rate_limits
    from toolcrib.gateway.identity import members

    _check("remove", id=rule_id)

    async def work(gw: Gateway) -> None:
        await rate_limits.remove_limit(gw, await members.operator_principal(gw.store), rule_id)

    run_gateway(database, work)
    console.print(f"removed {rule_id}")
