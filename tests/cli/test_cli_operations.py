"""One operation table for every face (#33): each control-plane operation ``toolcrib__{resource}__{
operation}`` is the command ``toolcrib {resource} {operation}`` with the same arguments, its
options derived from the operation's typed model, running the same ``ControlPlane.call`` as the
MCP and REST faces (R-10.1, R-10.2)."""

from __future__ import annotations

import pytest
import typer
from tests.conftest import FIXTURE_SERVER, ROOT, cli, cli_json
from typer import _click as click
from typer.core import TyperGroup

from toolcrib.cli.main import app
from toolcrib.cli.operations import ALIASES, flag_of
from toolcrib.gateway.control import OPERATIONS
from toolcrib.operations import OPERATION_SPECS, input_schema

RENAMED = {
    ("grants", "revoke"): {"id": "grant_id"},
    ("approvals", "approve"): {"id": "approval_id"},
    ("limits", "remove"): {"id": "rule_id"},
    ("frozen", "set"): {"value": "json_value"},
    ("tools", "changes"): {"account": "connection"},
    ("approvals", "set"): {"required": "off"},  # --off is required=false
    # --as answers as the member (the command line acts as them, as `toolcrib call --as` does)
    ("prompts", "list"): {"member": "as_member"},
    ("resources", "list"): {"member": "as_member"},
    ("resources", "read"): {"member": "as_member"},
}
"""A kept hand-written command of the operation's own name whose argument has another Python name
(the same value: a positional id, ``--connection`` for the account...); its output is tested."""


def _groups() -> TyperGroup:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    return root


def _command(root: TyperGroup, resource: str, name: str) -> click.Command | None:
    """``toolcrib RESOURCE NAME`` as the command line finds it (groups are built when named)."""
    context = click.Context(root)
    group = root.get_command(context, resource)
    assert isinstance(group, TyperGroup), resource
    return group.get_command(context, name)


def test_r10_2_every_operation_has_one_handler_and_its_schema_from_its_model() -> None:
    assert [(o.resource, o.operation) for o in OPERATIONS] == [
        (s.resource, s.operation) for s in OPERATION_SPECS
    ]
    for op, described in zip(OPERATIONS, OPERATION_SPECS, strict=True):
        assert op.input_schema == input_schema(described.arguments)
        assert op.description == described.description
        assert "title" not in str(op.input_schema)


def test_r10_1_every_owner_operation_is_the_command_of_its_resource_and_operation_name() -> None:
    root = _groups()
    for described in OPERATION_SPECS:
        command = _command(root, described.resource, described.operation)
        assert command is not None, f"toolcrib {described.resource} {described.operation}"
        renamed = RENAMED.get((described.resource, described.operation), {})
        names = {p.name for p in command.params}
        flags = {o for p in command.params for o in p.opts}
        for field in described.arguments.model_fields:
            assert renamed.get(field, field) in names, (described.key, field)
            if command.callback is not None and command.callback.__module__ == "toolcrib.cli.operations":
                assert flag_of(field) in flags, (described.key, field)
        assert "--database" in flags


def test_r10_1_todays_command_names_stay_as_aliases_of_the_operation_commands() -> None:
    root = _groups()
    for alias, target in ALIASES.items():
        for words in (alias, target):
            assert _command(root, *words.split()) is not None, words
        command = _command(root, *alias.split())
        assert command is not None
        assert f"An alias of `toolcrib {target}`." in (command.help or "")
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for alias, target in ALIASES.items():
        assert f"`{alias}` = `{target}`" in readme  # documented


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('ops') / 'toolcrib.db'}"
    cli(url, "init")
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    return url


def test_r10_3_tools_diagnose_runs_the_diagnosis_as_the_operator(org: str) -> None:
    found = cli_json(org, "tools", "diagnose", "--name", "nowhere__thing")
    assert isinstance(found, dict)
    assert found["name"] == "nowhere__thing"
    assert found["stopped_at"] == "connection_exists"
    shown = cli(org, "tools", "diagnose", "--name", "nowhere__thing")
    assert "stopped_at: connection_exists" in shown.stdout


def test_r10_2_results_read_of_an_unknown_result_is_not_found(org: str) -> None:
    out = cli(org, "results", "read", "--result-id", "r_unknown", "--json", check=False)
    assert out.returncode == 1
    assert '"code": "not_found"' in out.stdout
    out = cli(org, "results", "read", "--json", check=False)  # the required option
    assert out.returncode != 0


def test_r10_1_connections_get_is_the_connection_as_listed(org: str) -> None:
    one = cli_json(org, "connections", "get", "--name", "desk")
    listed = cli_json(org, "connections", "list")
    assert isinstance(one, dict)
    assert isinstance(listed, list)
    assert one["name"] == "desk"
    assert one["name"] in [c["name"] for c in listed]
    out = cli(org, "connections", "get", "--name", "nobody", "--json", check=False)
    assert out.returncode == 1
    assert '"code": "not_found"' in out.stdout


def test_r10_1_members_invite_adds_the_member(org: str) -> None:
    added = cli_json(org, "members", "invite", "--name", "alice", "--role", "member")
    assert isinstance(added, dict)
    assert added["name"] == "alice"
    listed = cli_json(org, "members", "list")
    assert isinstance(listed, list)
    assert {"alice": "member"}.items() <= {m["name"]: m["role"] for m in listed}.items()
    out = cli(org, "members", "invite", "--name", "bob", "--role", "no-such-role", "--json", check=False)
    assert out.returncode == 1
    assert '"error"' in out.stdout


def test_r10_2_restrictions_create_then_delete(org: str) -> None:
    rule = cli_json(
        org, "restrictions", "create", "--effect", "block", "--target-kind", "role", "--target", "member",
        "--account", "desk", "--tool", "add_numbers",
    )  # fmt: skip
    assert isinstance(rule, dict)
    rules = cli_json(org, "restrictions", "list")
    assert isinstance(rules, list)
    assert rule["id"] in [r["id"] for r in rules]
    deleted = cli_json(org, "restrictions", "delete", "--id", rule["id"])
    assert deleted == {"deleted": rule["id"]}
    rules = cli_json(org, "restrictions", "list")
    assert isinstance(rules, list)
    assert rule["id"] not in [r["id"] for r in rules]
    out = cli(org, "restrictions", "create", "--effect", "block", "--json", check=False)
    assert out.returncode != 0


def test_r10_1_connections_create_takes_the_command_word_by_word_and_delete_removes_it(org: str) -> None:
    words = [arg for word in FIXTURE_SERVER for arg in ("--command", word)]
    made = cli_json(org, "connections", "create", "--name", "clock", "--connector", "Clock", *words)
    assert isinstance(made, dict)
    assert made["name"] == "clock"
    assert made["status"] == "active"
    assert cli_json(org, "connections", "delete", "--name", "clock") == {"removed": "clock"}
    listed = cli_json(org, "connections", "list")
    assert isinstance(listed, list)
    assert "clock" not in [c["name"] for c in listed]
