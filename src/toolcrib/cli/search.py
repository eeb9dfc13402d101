"""``toolcrib search``: a search as a model gets it, and what search learned (R-5.12).

``toolcrib search QUERY`` searches (the ``query`` command, taken when the first word is no other
command: ``toolcrib search query forget`` searches for the word "forget"). ``toolcrib search
examples`` and ``toolcrib search forget [--tool PUBLIC_NAME]`` call the same gateway functions as
the ``toolcrib__search__*`` tools and the REST API, as the host operator, their arguments
validated by the same ``inputSchema`` first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import DatabaseOption, JsonOption, emit, fail, run_gateway
from toolcrib.cli.lazy import OperationGroup
from toolcrib.errors import InBandError

if TYPE_CHECKING:
    from typer._click.core import Context  # typer's own click, which OperationGroup is built on

    from toolcrib.gateway.core import Gateway

__all__ = ["search_app"]


class _QueryByDefault(OperationGroup):
    """A group whose first argument, when it names none of its commands, is a query."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        if args and args[0] not in ("--help", "-h") and self.get_command(ctx, args[0]) is None:
            args = ["query", *args]
        return super().parse_args(ctx, args)


search_app = typer.Typer(
    cls=_QueryByDefault,
    no_args_is_help=True,
    help="Search connected tools (toolcrib search QUERY), and what search learned from use.",
)


def _check(op: str, **arguments: Any) -> None:
    from toolcrib.gateway.operation_input import check_operation_input

    try:
        check_operation_input("search", op, {k: v for k, v in arguments.items() if v is not None})
    except InBandError as exc:
        fail(exc)


@search_app.command("examples")
def search_examples(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Per tool: how many past searches led to it, and from how many members (never their text)."""
    from toolcrib.gateway.discovery import learning
    from toolcrib.gateway.identity import members

    async def work(gw: Gateway) -> list[dict[str, Any]]:
        return await learning.example_counts(gw, await members.operator_principal(gw.store))

    emit(run_gateway(database, work), as_json, columns=["tool", "examples", "members", "newest"])


@search_app.command("forget")
def search_forget(
    tool: str | None = typer.Option(None, "--tool", help="Only this tool (its public name)."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Forget what search learned of one tool, or of every tool."""
    from toolcrib.gateway.discovery import learning
    from toolcrib.gateway.identity import members

    _check("forget", tool=tool)

    async def work(gw: Gateway) -> dict[str, Any]:
        return await learning.forget_examples(gw, await members.operator_principal(gw.store), tool)

    emit(run_gateway(database, work), as_json)
