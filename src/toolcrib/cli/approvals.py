"""Approval commands (#14): which calls need an approval, and approving or declining a held call.

They call the same gateway functions as the ``toolcrib__approvals__*`` tools and the REST API
(``decline`` as the console's Decline button).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, emit, run_as_operator

if TYPE_CHECKING:
    from toolcrib.gateway.core import Gateway
    from toolcrib.policy.gates import Principal

__all__ = ["approvals_app"]

approvals_app = typer.Typer(no_args_is_help=True, help="Approvals for calls a rule holds.")

_RULE_COLUMNS = ["id", "classification", "account", "role"]


@approvals_app.command("set")
def approvals_set(
    risk: str,
    account: str | None = typer.Option(None, "--account", help="Only this connection's calls."),
    role: str | None = typer.Option(None, "--role", help="Only calls by members of this role."),
    off: bool = typer.Option(False, "--off", help="Stop requiring this approval."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Require an approval for calls of RISK (read, write or destructive)."""
    from toolcrib.gateway.governance import approvals

    async def work(gw: Gateway, op: Principal) -> list[dict[str, Any]]:
        rules = await approvals.set_approval_rule(
            gw, risk, account=account, role=role, required=not off, actor=op
        )
        return [approvals.rule_view(r) for r in rules]

    emit(run_as_operator(database, work), as_json, columns=_RULE_COLUMNS)


@approvals_app.command("list")
def approvals_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """The approval rules."""
    from toolcrib.gateway.governance import approvals

    async def work(gw: Gateway, op: Principal) -> list[dict[str, Any]]:
        return [approvals.rule_view(r) for r in await approvals.list_approval_rules(gw.policy, op)]

    emit(run_as_operator(database, work), as_json, columns=_RULE_COLUMNS)


@approvals_app.command("approve")
def approvals_approve(
    approval_id: str, database: str | None = DatabaseOption, as_json: bool = JsonOption
) -> None:
    """Approve a held call: the same call by the same member then runs once."""
    from toolcrib.gateway.governance import approvals

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return approvals.approval_view(await approvals.approve(gw.store, approval_id, op))

    emit(run_as_operator(database, work), as_json)


@approvals_app.command("decline")
def approvals_decline(
    approval_id: str, database: str | None = DatabaseOption, as_json: bool = JsonOption
) -> None:
    """Decline a held call: it does not run, and its arguments are forgotten."""
    from toolcrib.gateway.governance import approvals

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return approvals.approval_view(await approvals.decline(gw.store, approval_id, op))

    emit(run_as_operator(database, work), as_json)
