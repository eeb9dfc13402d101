"""What every command shares: the ``--database`` option, running a gateway, printing data.

Data (reasons, descriptions, upstream text) is printed as plain text, never as rich markup: a
``[bold]`` or ``[Errno 2]`` in it must reach the terminal as written.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from toolcrib.errors import InvalidArguments
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.faults import in_band
from toolcrib.settings import Settings

__all__ = ["DatabaseOption", "JsonOption", "console", "emit", "fail", "run_gateway", "settings_for"]

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)
_incidents = logging.getLogger("toolcrib.incidents")

DatabaseOption = typer.Option(None, "--database", help="Database URL (default: TOOLCRIB_DATABASE_URL).")
JsonOption = typer.Option(False, "--json", help="Print JSON for scripts.")


def settings_for(database: str | None, **overrides: Any) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    if database:
        values["database_url"] = database
    return Settings(**values)


def run_gateway(database: str | None, work: Callable[[Gateway], Awaitable[T]], **overrides: Any) -> T:
    """Open the gateway (migrating the database), run ``work``, close; errors exit 1 with a message."""

    async def main() -> T:
        async with Gateway.open(settings_for(database, **overrides)) as gw:
            return await work(gw)

    # A command is its own server side: an incident's traceback goes to its stderr under the id the
    # error line names (``serve`` logs through its own logging set-up instead).
    log = logging.StreamHandler(sys.stderr)
    log.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    _incidents.addHandler(log)
    try:
        return anyio.run(main)
    except Exception as exc:  # the same in-band code as over MCP and REST; never Python's or SQL's words
        fail(exc)
    finally:
        _incidents.removeHandler(log)


def fail(exc: Exception) -> NoReturn:
    """Print ``code: message`` (and each argument error's pointer) on stderr; exit 1."""
    error = in_band(exc)
    payload = error.to_payload()["error"]
    err_console.print(f"[red]{error.code}[/red]: {escape(str(payload['message']))}")
    if isinstance(error, InvalidArguments):
        for item in error.errors:
            err_console.print(f"  {escape(item['pointer'] or '/')}: {escape(item['message'])}")
    raise typer.Exit(1) from exc


def emit(data: Any, as_json: bool, *, columns: Sequence[str] | None = None, title: str | None = None) -> None:
    """Print ``data`` as JSON, or as a table (list of dicts) / key-value lines (dict)."""
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
        return
    if isinstance(data, list) and (columns or data):
        cols = list(columns or data[0].keys())
        table = Table(*cols, title=title)
        for item in data:
            table.add_row(*(Text("" if item.get(c) is None else str(item.get(c))) for c in cols))
        console.print(table)
    elif isinstance(data, dict):
        for key, value in data.items():
            shown = value if not isinstance(value, dict | list) else json.dumps(value)
            console.print(f"[bold]{escape(str(key))}[/bold]: {escape(str(shown))}")
    else:
        console.print(data if data not in (None, []) else "(nothing)", markup=False)
