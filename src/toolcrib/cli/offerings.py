"""``toolcrib prompts list``, ``toolcrib resources list`` and ``toolcrib resources read URI`` (#34).

The operations ``prompts__list``, ``resources__list`` and ``resources__read`` of the control
plane, run through :meth:`ControlPlane.call` as every command is; ``--as MEMBER`` answers as that
member (their role and restrictions), as ``toolcrib call --as`` does. The generated
``toolcrib resources list_templates`` lists the templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, call_operation, emit

if TYPE_CHECKING:
    pass

__all__ = ["prompts_app", "resources_app"]

prompts_app = typer.Typer(no_args_is_help=True, help="Prompts of the connections (`{account}__{prompt}`).")
resources_app = typer.Typer(no_args_is_help=True, help="Resources of the connections, by gateway URI.")
AsMember = typer.Option(None, "--as", help="Answer as this member (their role and restrictions).")
Account = typer.Option(None, "--account", help="Only this connection's.")
Cursor = typer.Option(None, "--cursor", help="The next page, as the last one named it.")


def _run(database: str | None, operation: str, arguments: dict[str, Any], as_member: str | None) -> Any:
    given = {k: v for k, v in arguments.items() if v is not None}
    return call_operation(database, operation, given, as_member=as_member)


@prompts_app.command("list")
def prompts_list(
    account: str | None = Account,
    cursor: str | None = Cursor,
    as_member: str | None = AsMember,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Prompts of the active connections you may reach, with their arguments."""
    page = _run(database, "prompts__list", {"account": account, "cursor": cursor}, as_member)
    _emit_page(page, "prompts", ["name", "description", "arguments"], as_json)


@resources_app.command("list")
def resources_list(
    account: str | None = Account,
    cursor: str | None = Cursor,
    as_member: str | None = AsMember,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Resources of the active connections you may reach: gateway URI, name, type."""
    page = _run(database, "resources__list", {"account": account, "cursor": cursor}, as_member)
    _emit_page(page, "resources", ["uri", "name", "mimeType"], as_json)


@resources_app.command("read")
def resources_read(
    uri: str = typer.Argument(..., help="The gateway URI, toolcrib://{account}/{original URI}."),
    as_member: str | None = AsMember,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Read one resource through the gateway's gates (redacted, capped, audited)."""
    result = _run(database, "resources__read", {"uri": uri}, as_member)
    if as_json:
        emit(result, True)
        return
    for entry in result.get("contents", []):
        typer.echo(
            entry["text"] if "text" in entry else f"[{len(entry.get('blob', ''))} characters of base64]"
        )


def _emit_page(page: dict[str, Any], key: str, columns: list[str], as_json: bool) -> None:
    if as_json:
        emit(page, True)
        return
    emit(page[key], False, columns=columns, title=key)
    if page.get("nextCursor"):
        typer.echo(f"more: --cursor {page['nextCursor']}")
