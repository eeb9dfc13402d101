"""What every command shares: the ``--database`` option, running a gateway, printing data.

Data (reasons, descriptions, upstream text) is printed as plain text, never as rich markup: a
``[bold]`` or ``[Errno 2]`` in it must reach the terminal as written.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from toolcrib.cli.database import require_database

if TYPE_CHECKING:  # the gateway and the settings are imported by the commands that run them only
    from rich.console import Console

    from toolcrib.gateway.core import Gateway
    from toolcrib.gateway.reading import Reading
    from toolcrib.policy.gates import Principal
    from toolcrib.settings import Settings

__all__ = [
    "DatabaseOption",
    "JsonOption",
    "console",
    "emit",
    "err_console",
    "escape",
    "fail",
    "iso_time",
    "read_as_operator",
    "run_as_operator",
    "run_gateway",
    "run_reading",
    "settings_for",
]

T = TypeVar("T")


class LazyConsole:
    """rich's ``Console``, made at the first print: rich (~0.05 s of imports) loads only in a
    command that prints through it, not in one that prints JSON or nothing (#33)."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def print(self, *objects: Any, **options: Any) -> None:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        self._console.print(*objects, **options)


console = LazyConsole()
err_console = LazyConsole(stderr=True)
_incidents = logging.getLogger("toolcrib.incidents")

DatabaseOption = typer.Option(
    None,
    "--database",
    help="Database URL (default: TOOLCRIB_DATABASE_URL, else toolcrib.toml or .env here).",
)
JsonOption = typer.Option(False, "--json", help="Print JSON for scripts (errors too).")


def settings_for(database: str | None, **overrides: Any) -> Settings:
    """The settings of a command: the environment, the database found by :func:`require_database`."""
    from toolcrib.errors import ConfigError
    from toolcrib.settings import Settings

    values = {k: v for k, v in overrides.items() if v is not None}
    try:
        values["database_url"] = require_database(database)
    except ConfigError as exc:
        fail(exc)
    return Settings(**values)


def run_as_operator(
    database: str | None, work: Callable[[Gateway, Principal], Awaitable[T]], **options: Any
) -> T:
    """``run_gateway``, acting as the host's :class:`~toolcrib.policy.gates.Operator`: the first
    active owner holding every scope, through the same checks as every other face."""

    async def as_operator(gw: Gateway) -> T:
        from toolcrib.gateway.identity.members import operator_principal

        return await work(gw, await operator_principal(gw.store))

    return run_gateway(database, as_operator, **options)


def read_as_operator(database: str | None, work: Callable[[Reading, Principal], Awaitable[T]]) -> T:
    """``run_reading``, acting as the host's operator (as :func:`run_as_operator` does)."""

    async def as_operator(reading: Reading) -> T:
        from toolcrib.gateway.identity.members import operator_principal

        return await work(reading, await operator_principal(reading.store))

    return run_reading(database, as_operator)


def call_operation(
    database: str | None, key: str, arguments: dict[str, Any], *, as_member: str | None = None
) -> Any:
    """Run the control-plane operation ``key`` (``resource__operation``) through
    :meth:`ControlPlane.call` with the REST face's checks, as the host's operator or, with
    ``as_member``, as that member (``--as``); its result."""

    async def work(gw: Gateway) -> Any:
        from toolcrib.gateway.control import ControlPlane
        from toolcrib.gateway.identity.members import operator_principal

        principal = await operator_principal(gw.store, as_member)
        name = f"{gw.settings.control_prefix}__{key}"
        return (await ControlPlane(gw).call(principal, name, arguments, over_mcp=False))["result"]

    return run_gateway(database, work)


def run_gateway(
    database: str | None,
    work: Callable[[Gateway], Awaitable[T]],
    *,
    meaning: bool = False,
    **overrides: Any,
) -> T:
    """Open the gateway (migrating the database), run ``work``, close; errors exit 1 with a message.

    Only a command that searches (``meaning=True``) loads the meaning channel's model (about a
    second); the others leave tool vectors to the serving gateways, which encode them once.
    A command whose work only reads the store opens no gateway: :func:`run_reading`.
    """
    from toolcrib.gateway.process import open_gateway

    if not meaning:
        overrides["semantic"] = False
    settings = settings_for(database, **overrides)

    async def main() -> T:
        async with open_gateway(settings, follow_changes=False) as gw:
            return await work(gw)

    return _run(main)


def run_reading(database: str | None, work: Callable[[Reading], Awaitable[T]]) -> T:
    """``run_gateway`` of a command whose ``work`` only reads the store (no catalog, index or
    upstream session): the store opened and checked as a gateway opens it, and the policy
    snapshot, with ``reading.open_to_read``; no gateway, no background task, nothing loaded (#33)."""
    from toolcrib.gateway.reading import open_to_read

    settings = settings_for(database, semantic=False)

    async def main() -> T:
        async with open_to_read(settings) as reading:
            return await work(reading)

    return _run(main)


def _run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main`` in its own event loop; errors exit 1 with a message."""
    import anyio

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


def escape(text: str) -> str:
    """``rich.markup.escape``: ``text`` printed as written, never read as markup."""
    from rich.markup import escape as escaped

    return escaped(text)


def _wants_json() -> bool:
    """Whether this command line asked for ``--json`` (errors then print as JSON on stdout)."""
    return "--json" in sys.argv[1:]


def fail(exc: Exception) -> NoReturn:
    """Print the in-band error and exit 1: ``code: message`` and each detail on stderr (argument
    pointers, missing fields, the scope...), or its ``{"error": {...}}`` payload under ``--json``."""
    from toolcrib.gateway.faults import in_band

    payload = in_band(exc).to_payload()
    if _wants_json():
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2, default=str) + "\n")
        raise typer.Exit(1) from exc
    error = payload["error"]
    err_console.print(f"[red]{error['code']}[/red]: {escape(str(error['message']))}")
    for key, value in error.items():
        if key in ("code", "message"):
            continue
        if key == "errors" and isinstance(value, list):
            for item in value:
                err_console.print(
                    f"  {escape(item.get('pointer') or '/')}: {escape(str(item.get('message')))}"
                )
        else:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            err_console.print(f"  {escape(str(key))}: {escape(shown)}")
    raise typer.Exit(1) from exc


_TIME_KEYS = ("_at", "_time")


def iso_time(value: float) -> str:
    """A Unix time as ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")


def _readable(data: Any, key: str = "") -> Any:
    """Times (``*_at``, ``ts``) as ISO 8601, recursively; everything else as it is."""
    if isinstance(data, dict):
        return {k: _readable(v, k) for k, v in data.items()}
    if isinstance(data, list):
        return [_readable(v) for v in data]
    timed = key == "ts" or key.endswith(_TIME_KEYS)
    if timed and isinstance(data, int | float) and not isinstance(data, bool):
        return iso_time(float(data))
    return data


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def emit(data: Any, as_json: bool, *, columns: Sequence[str] | None = None, title: str | None = None) -> None:
    """Print ``data`` as JSON, or as a table (list of dicts) / key-value lines (dict)."""
    data = _readable(data)
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
        return
    if isinstance(data, list) and (columns or data):
        from rich.table import Table
        from rich.text import Text

        cols = list(columns or data[0].keys())
        table = Table(*cols, title=title)
        for item in data:
            table.add_row(*(Text(_cell(item.get(c))) for c in cols))
        console.print(table)
    elif isinstance(data, dict):
        for key, value in data.items():
            shown = value if not isinstance(value, dict | list) else json.dumps(value)
            console.print(f"[bold]{escape(str(key))}[/bold]: {escape(str(shown))}")
    else:
        console.print(data if data not in (None, []) else "(nothing)", markup=False)
