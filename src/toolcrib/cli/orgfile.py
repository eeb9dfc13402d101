"""``toolcrib plan / apply / export / schema`` (#26): the organization as a file.

The commands read and write the file; the gateway (``gateway.orgfile``) checks, plans and applies
it through the same functions as every other face, acting as the host's Operator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, console, emit, fail, run_gateway

if TYPE_CHECKING:
    from toolcrib.gateway.core import Gateway

__all__ = ["register"]

FileOption = typer.Option(..., "-f", "--file", help="The organization file (YAML); - reads standard input.")
PruneOption = typer.Option(False, "--prune", help="Also delete what the file does not list.")
SCHEMA_PATH = Path("docs/toolcrib.schema.json")


def _read(path: str) -> tuple[str, str]:
    """The file's text (bounded) and the name errors show."""
    from toolcrib.errors import InvalidArguments
    from toolcrib.gateway.orgfile.loading import MAX_BYTES

    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as fh:
                raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        fail(
            InvalidArguments(
                f"cannot read {path}: {exc.strerror}", [{"pointer": path, "message": "unreadable"}]
            )
        )
    if len(raw) > MAX_BYTES:
        fail(
            InvalidArguments(f"{path} is over {MAX_BYTES} bytes", [{"pointer": path, "message": "too large"}])
        )
    try:
        return raw.decode("utf-8"), ("<stdin>" if path == "-" else path)
    except UnicodeDecodeError:
        fail(InvalidArguments(f"{path} is not UTF-8 text", [{"pointer": path, "message": "not UTF-8"}]))


def _print_changes(outcome: tuple[list[object], list[object]], as_json: bool, done: bool) -> None:
    """The changes, then what waits for a tool not listed yet (no change: R-13.8)."""
    from toolcrib.gateway.orgfile.planning import Change, Note

    shown = [c for c in outcome[0] if isinstance(c, Change)]
    waiting = [n for n in outcome[1] if isinstance(n, Note)]
    if as_json:
        views = [n.view() for n in waiting]
        emit({"changes": [c.view() for c in shown], "applied": done, "waiting": views}, True)
        return
    for c in shown:
        console.print(c.line(), markup=False, highlight=False)
    counts = {a: sum(1 for c in shown if c.action == a) for a in ("create", "update", "delete")}
    summary = ", ".join(f"{n} to {a}" for a, n in counts.items()) if shown else "no changes"
    verb = "applied" if done else "plan"
    console.print(f"{verb}: {summary}" if shown else summary, markup=False)
    if waiting:
        console.print(
            "not listed by their connections yet (stored, enforced when they appear):", markup=False
        )
    for n in waiting:
        console.print(n.line(), markup=False, highlight=False)


def plan(
    file: str = FileOption,
    prune: bool = PruneOption,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Print what applying the file would change; exit 2 when something would, 0 when nothing."""
    text, source = _read(file)

    async def work(gw: Gateway) -> tuple[list[object], list[object]]:
        from toolcrib.gateway.orgfile.service import plan_file, principal_for_file, waiting_notes

        actor = await principal_for_file(gw.store, text, source, create_owner=False)
        desired, changes = await plan_file(gw, actor, text, source, prune=prune)
        return list(changes), list(await waiting_notes(gw, actor, desired))

    outcome = run_gateway(database, work)
    _print_changes(outcome, as_json, done=False)
    raise typer.Exit(2 if outcome[0] else 0)  # what waits for a tool is no change


def apply(
    file: str = FileOption,
    prune: bool = PruneOption,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Apply the file, all or nothing, through the same checks as every face."""
    text, source = _read(file)

    async def work(gw: Gateway) -> tuple[list[object], list[object]]:
        from toolcrib.gateway.orgfile.service import apply_and_note, principal_for_file

        actor = await principal_for_file(gw.store, text, source, create_owner=True)
        changes, waiting = await apply_and_note(gw, actor, text, source, prune=prune)
        return list(changes), list(waiting)

    _print_changes(run_gateway(database, work), as_json, done=True)


def export(
    output: str | None = typer.Option(None, "-o", "--output", help="Write here (default: standard output)."),
    database: str | None = DatabaseOption,
) -> None:
    """Write the organization as a file; secrets as ${env:NAME} references, never values."""

    async def work(gw: Gateway) -> str:
        from toolcrib.gateway.identity.members import operator_principal
        from toolcrib.gateway.orgfile.service import export_org

        return await export_org(gw, await operator_principal(gw.store))

    text = run_gateway(database, work)
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")


def schema(
    output: str | None = typer.Option(None, "-o", "--output", help=f"Write here (e.g. {SCHEMA_PATH})."),
) -> None:
    """Print the organization file's JSON Schema (published as docs/toolcrib.schema.json)."""
    from toolcrib.gateway.orgfile.models import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")


def register(app: typer.Typer) -> None:
    """Add the commands to the ``toolcrib`` application."""
    for command in (plan, apply, export, schema):
        app.command()(command)
