"""Grant commands (R-7.9): every grant of the organization, or one member's, and revoking one.

The same gateway functions as ``toolcrib__grants__list`` / ``__revoke``, the REST API and the
console; the command line acts as the operator (the owner, every scope).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, console, emit, run_gateway

if TYPE_CHECKING:
    from toolcrib.gateway.core import Gateway

__all__ = ["grants_app"]

grants_app = typer.Typer(
    no_args_is_help=True, help="Grants: personal tokens, OAuth clients, sign-in sessions."
)

_COLUMNS = ["id", "member", "kind", "client_name", "scopes", "created_at", "last_used_at", "revoked"]


@grants_app.command("list")
def grants_list(
    member: str | None = typer.Option(None, "--member", help="Only this member's grants."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Grants with their client, scopes, creation and last use (never a token)."""
    from toolcrib.gateway.identity import grants
    from toolcrib.gateway.identity.members import operator_principal

    async def work(gw: Gateway) -> list[dict[str, Any]]:
        return await grants.list_grants(gw.store, await operator_principal(gw.store), member)

    emit(run_gateway(database, work), as_json, columns=_COLUMNS)


@grants_app.command("revoke")
def grants_revoke(grant_id: str, database: str | None = DatabaseOption) -> None:
    """Revoke a grant: its tokens (an OAuth grant's refresh token too) stop on their next use."""
    from toolcrib.gateway.identity import grants
    from toolcrib.gateway.identity.members import operator_principal

    async def work(gw: Gateway) -> None:
        await grants.revoke_grant(gw.store, await operator_principal(gw.store), grant_id)

    run_gateway(database, work)
    console.print(f"revoked {grant_id}")
