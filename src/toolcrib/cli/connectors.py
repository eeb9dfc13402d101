"""``toolcrib connectors search WORDS`` and ``connectors show SERVER[@VERSION]`` (#35, R-13.9).

The words and the name as arguments, as people type them; the operations are the table's own
(``connectors__search``, ``connectors__show``), run through :class:`ControlPlane` like the MCP and
REST faces. ``connectors updates`` and ``connectors upgrade`` are the table's generated commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, call_operation, emit

if TYPE_CHECKING:
    pass

__all__ = ["connectors_app"]

connectors_app = typer.Typer(no_args_is_help=True, help="The connector catalog: MCP registries (R-13.9).")


def _call(database: str | None, operation: str, arguments: dict[str, Any]) -> Any:
    return call_operation(database, f"connectors__{operation}", arguments)


@connectors_app.command("search")
def connectors_search(
    words: list[str] = typer.Argument(..., help="Words of the server's name, e.g. time."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Find servers in the registries: name, version, status, whether it may be added and what it
    needs (``--json`` and ``connectors show`` add the title, description, transports, repository);
    never a deleted entry, deprecated ones marked."""
    found = _call(database, "search", {"words": " ".join(words)})
    if as_json:
        emit(found, True)
        return
    rows = [
        {
            "name": s["name"],
            "version": s["version"],
            "status": s["status"],
            "addable": s["addable"],
            "needs": ", ".join(i["name"] + (" (secret)" if i["secret"] else "") for i in s.get("inputs", [])),
        }
        for s in found["servers"]
    ]
    emit(rows, False)
    for registry in found["registries"]:
        typer.echo(
            f"{registry['registry']}: {registry['entries']} entries, {registry['age_seconds']:g} s old"
        )


@connectors_app.command("show")
def connectors_show(
    name: str = typer.Argument(..., help="SERVER[@VERSION], the latest when no version."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """One registry entry: what it is, its transports, the inputs it asks for (which are secret)."""
    emit(_call(database, "show", {"name": name}), as_json)
