"""``toolcrib``: the command-line face. Every command takes ``--database``; data commands ``--json``."""

from __future__ import annotations

import gc
import json
import logging
from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli import orgfile, reference
from toolcrib.cli.common import DatabaseOption, JsonOption, console, emit, fail, run_gateway, settings_for
from toolcrib.cli.lazy import LazyRoot
from toolcrib.cli.search import search_app
from toolcrib.errors import InBandError, InvalidArguments

if TYPE_CHECKING:  # imported by the commands that run a gateway, never by `--help` (#13)
    from toolcrib.gateway.core import Gateway

__all__ = ["Program", "app"]


class Program(typer.Typer):
    """``toolcrib`` run as a program: the ``toolcrib`` script and ``python -m toolcrib.cli`` call
    it (typer's ``CliRunner`` runs its command instead, in a process that goes on).

    When the command has finished, every object the process made (the modules, the commands, the
    engine, the rows) is frozen out of the garbage collector (``gc.freeze``): the interpreter's
    exit then deallocates what it deallocates, but its full collections no longer walk all of them
    to find the few cycles the operating system frees anyway: ~0.14 s of the 0.56 s of
    ``toolcrib connections list`` was that walk (#33). Nothing of the command's work or output
    changes: it has run and printed, and the ``atexit`` handlers still run (flushing the logs).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            gc.freeze()


app = Program(cls=LazyRoot, no_args_is_help=True, help="toolcrib: one MCP endpoint for a whole organization.")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolcrib")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"toolcrib {_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """toolcrib: one MCP endpoint for a whole organization."""


# The groups (connections, members, ..., search: `toolcrib search QUERY`) and every control-plane
# operation as `toolcrib {resource} {operation}` (#33) are built by LazyRoot when named.
orgfile.register(app)  # plan / apply / export / schema (#26)
reference.register(app)  # config-reference, hidden: writes docs/configuration.md (#25)


def _check_meta(name: str, arguments: dict[str, Any]) -> None:
    """Validate by the meta-tool's listed ``inputSchema``, as the MCP face does (R-10.2)."""
    from toolcrib.gateway.discovery.surface import meta_input_schemas
    from toolcrib.gateway.inputs import validate_input

    try:
        validate_input(meta_input_schemas()[name], arguments)
    except InBandError as exc:
        fail(exc)


AsOption = typer.Option(None, "--as", help="Act as this member (their role; the operator's scopes).")


@app.command()
def serve(
    host: str = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default 8765)."),
    database: str | None = DatabaseOption,
    workers: int = typer.Option(
        1, "--workers", min=1, help="Gateway processes behind the port, each a replica (R-15.2)."
    ),
) -> None:
    """Serve POST /mcp (and /healthz, /metrics) until interrupted."""
    import uvicorn

    from toolcrib.logs import configure
    from toolcrib.web.app import create_app

    settings = settings_for(database, host=host, port=port)
    configure(settings.log_level, settings.log_format)
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))  # per-start noise
    if settings.log_format == "json":  # every line of a JSON-logging process is JSON
        logging.getLogger("toolcrib").info("serving %s/mcp", settings.resource_url)
    else:
        console.print(f"toolcrib serving [bold]{settings.resource_url}/mcp[/bold]")
    if workers > 1:
        from toolcrib.cli.workers import serve_workers

        serve_workers(settings, workers)
        return
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_keep_alive=settings.http_keep_alive_seconds,
        ws="none",  # no WebSocket route: its protocol modules are not even imported
        proxy_headers=False,  # toolcrib.web.proxies alone decides whom to believe (trusted_proxies)
    )


@app.command()
def init(
    name: str = typer.Option("owner", help="Name of the owner member."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Create the database and the owner member; print the owner's token once.

    With no database named anywhere, it creates ``toolcrib.db`` here and writes ``toolcrib.toml``
    naming it, which every other command then reads."""
    from toolcrib.cli.database import DEFAULT_DATABASE, find_database, remember_database
    from toolcrib.gateway.identity import members

    if find_database(database) is None:
        database = DEFAULT_DATABASE
        remember_database(database)

    async def work(gw: Gateway) -> dict[str, Any]:
        member, token = await members.init_owner(gw.store, name)
        return {"member": member.name, "token": token}

    out = run_gateway(database, work)
    if as_json:
        emit(out, True)
    else:
        console.print(f"owner [bold]{out['member']}[/bold] created. Token (shown once):\n{out['token']}")


@search_app.command("query")
def search(
    query: str,
    limit: int = typer.Option(3, min=1, max=5),
    as_member: str | None = AsOption,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Search connected tools, exactly as search_tools answers a model."""
    from toolcrib.gateway.discovery.search import search_tools
    from toolcrib.gateway.identity import members

    _check_meta("search_tools", {"query": query, "limit": limit})

    async def work(gw: Gateway) -> dict[str, Any]:
        return await search_tools(gw, await members.operator_principal(gw.store, as_member), query, limit)

    found = run_gateway(database, work, meaning=True)
    if as_json:
        emit(found, True)
        return
    rows = [
        {
            "name": c["name"],
            "risk": c.get("risk"),
            "confidence": c.get("confidence"),
            "description": c.get("description"),
        }
        for c in found["results"]
    ]
    emit(rows, False, columns=["name", "risk", "confidence", "description"])
    for key in ("restricted", "not_connected"):
        if found.get(key):
            console.print(f"{key}: {', '.join(found[key])}", markup=False)


@app.command()
def call(
    tool: str,
    args: str = typer.Option("{}", "--args", help="Arguments as a JSON object."),
    as_member: str | None = AsOption,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Run one connected tool through the same pipeline as execute_tool."""
    from toolcrib.gateway.calls.execute import execute_tool
    from toolcrib.gateway.identity import members

    try:
        arguments = json.loads(args)
    except (ValueError, RecursionError):
        fail(InvalidArguments("--args is not JSON", [{"pointer": "/arguments", "message": "not JSON"}]))
    _check_meta("execute_tool", {"tool": tool, "arguments": arguments})

    async def work(gw: Gateway) -> dict[str, Any]:
        return await execute_tool(
            gw, await members.operator_principal(gw.store, as_member), tool=tool, arguments=arguments
        )

    result = run_gateway(database, work)
    if as_json:
        emit(result, True)
        return
    for block in result.get("content", []):
        console.print(block.get("text", block), markup=False)


@app.command()
def quickstart(
    host: str = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default 8765)."),
    database: str | None = DatabaseOption,
) -> None:
    """Set up a demo organization (owner, token, real MCP servers from PyPI) and serve it."""
    from toolcrib.cli.database import DEFAULT_DATABASE, find_database, remember_database
    from toolcrib.cli.quickstart import prepare

    settings = settings_for(find_database(database) or DEFAULT_DATABASE, host=host, port=port)
    remember_database(settings.database_url)  # every later command here finds this organization
    prepare(settings)
    serve(host=settings.host, port=settings.port, database=settings.database_url, workers=1)
