"""Build only the commands a command line names (#33).

Typer builds every command of every group before it reads the arguments: 70 commands, their
options from the operation table's pydantic models, about 0.04 s of every start. Here the root
builds a group when it is named (``toolcrib connections list`` builds ``connections``), and a
group adds the operation table's commands (:mod:`toolcrib.cli.operations`) only when the name
asked for is none of its hand-written commands. ``--help`` and an unknown name build everything
first, so what they print (the list of commands, the "did you mean") is what a full build prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo

if TYPE_CHECKING:
    from typer._click.core import Command, Context  # typer's own click, which TyperGroup is built on

__all__ = ["GROUPS", "LazyRoot", "OperationGroup"]

GROUPS: tuple[tuple[str, str], ...] = (
    ("connections", "toolcrib.cli.admin:connections_app"),
    ("members", "toolcrib.cli.admin:members_app"),
    ("tokens", "toolcrib.cli.admin:tokens_app"),
    ("restrictions", "toolcrib.cli.admin:restrictions_app"),
    ("frozen", "toolcrib.cli.admin:frozen_app"),
    ("tools", "toolcrib.cli.admin:tools_app"),
    ("audit", "toolcrib.cli.admin:audit_app"),
    ("approvals", "toolcrib.cli.approvals:approvals_app"),
    ("grants", "toolcrib.cli.grants:grants_app"),
    ("limits", "toolcrib.cli.rate_limits:limits_app"),
    ("connectors", "toolcrib.cli.connectors:connectors_app"),  # the connector catalog (#35)
    ("eval", "toolcrib.cli.eval:eval_app"),
    ("prompts", "toolcrib.cli.offerings:prompts_app"),  # prompts and resources of connections (#34)
    ("resources", "toolcrib.cli.offerings:resources_app"),
    ("search", "toolcrib.cli.search:search_app"),
)
"""Each hand-written group of ``toolcrib``, in the order ``--help`` lists them, and where it lives.
A resource of the operation table with no group here gets one of its own, listed after these."""


def _typer_of(where: str) -> typer.Typer:
    module, _, name = where.partition(":")
    found = getattr(importlib.import_module(module), name)
    assert isinstance(found, typer.Typer)
    return found


class OperationGroup(TyperGroup):
    """A resource's group: its hand-written commands, and the operation table's for this resource
    that no hand-written command names, added at the first name it does not know (or a listing)."""

    pretty_exceptions_short = True
    operations_added = False

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        found = self.commands.get(cmd_name)
        if found is None and not self.operations_added:
            self.add_operations()
            found = self.commands.get(cmd_name)
        return found

    def list_commands(self, ctx: Context) -> list[str]:
        self.add_operations()
        return super().list_commands(ctx)

    def add_operations(self) -> None:
        from toolcrib.cli.operations import operation_commands

        if self.operations_added:
            return
        self.operations_added = True
        for name, callback in operation_commands(self.name or "", set(self.commands)):
            self.commands[name] = get_command_from_info(
                CommandInfo(name=name, callback=callback),
                pretty_exceptions_short=self.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
            )


class LazyRoot(TyperGroup):
    """``toolcrib``: its own commands built at once, each group of :data:`GROUPS` when named."""

    everything_built = False

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in dict(GROUPS):
            found = self.commands[cmd_name] = self._group(cmd_name, _typer_of(dict(GROUPS)[cmd_name]))
        elif found is None and not self.everything_built:
            self.build_everything()
            found = self.commands.get(cmd_name)
        return found

    def list_commands(self, ctx: Context) -> list[str]:
        self.build_everything()
        return super().list_commands(ctx)

    def build_everything(self) -> None:
        """Every group, in the order of a full build: the root's own commands, :data:`GROUPS`,
        then a group for each other resource of the operation table."""
        from toolcrib.cli.operations import table_resources

        if self.everything_built:
            return
        self.everything_built = True
        own = {name: c for name, c in self.commands.items() if not isinstance(c, OperationGroup)}
        for name, where in GROUPS:
            own[name] = self.commands.get(name) or self._group(name, _typer_of(where))
        for resource in table_resources():
            if resource not in own:
                help_text = f"The {resource} operations."
                own[resource] = self._group(resource, typer.Typer(no_args_is_help=True, help=help_text))
        self.commands = own

    def _group(self, name: str, app: typer.Typer) -> OperationGroup:
        from toolcrib.cli.operations import mark_aliases

        mark_aliases(name, app)
        cls = app.info.cls if isinstance(app.info.cls, type) else None
        group = get_group_from_info(
            TyperInfo(app, name=name, cls=cls if cls and issubclass(cls, OperationGroup) else OperationGroup),
            pretty_exceptions_short=True,
            rich_markup_mode=self.rich_markup_mode,
            suggest_commands=self.suggest_commands,
        )
        assert isinstance(group, OperationGroup)
        return group
