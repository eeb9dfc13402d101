"""The organization as a file (#26): ``toolcrib plan / apply / export / schema`` on a real SQLite
file, with the fixture upstream (a real stdio MCP server) as the connection.

The command line runs where the behaviour is the command's (exit codes, what is printed); the
lists are read in-process through the same gateway functions and views the ``list`` commands
print (a command-line process costs seconds on a loaded machine).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from tests.conftest import FIXTURE_SERVER, ROOT, cli

from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import approvals, rate_limits, restrictions
from toolcrib.gateway.identity import members
from toolcrib.gateway.orgfile.checks import Known, check_file
from toolcrib.gateway.orgfile.loading import FileError
from toolcrib.gateway.orgfile.service import apply_file, export_org, plan_file
from toolcrib.gateway.process import open_gateway
from toolcrib.policy.gates import Principal
from toolcrib.settings import Settings

T = TypeVar("T")
SECRET = "sk-fixture-org-file-0123456789"
ENV = {"DESK_KEY": SECRET}

ORG = f"""
connections:
  - name: desk
    connector: Helpdesk
    command: {shlex.join(FIXTURE_SERVER)}
    env: {{FIXTURE_API_KEY: "${{env:DESK_KEY}}"}}
    pinning: review
members:
  - {{name: owner, role: owner}}
  - {{name: ann, role: member}}
  - {{name: bob, role: auditor}}
restrictions:
  - {{effect: block, role: member, account: desk, tool: "delete_*"}}
  - {{effect: block, user: bob, account: desk}}
frozen:
  - {{account: desk, tool: create_ticket, parameter: priority, value: high}}
  - {{account: desk, tool: echo_message, parameter: message, value: "${{env:DESK_KEY}}"}}
approvals:
  - {{risk: destructive, account: desk}}
limits:
  - {{role: member, per_minute: 60}}
  - {{member: ann, account: desk, tool: echo_message, per_day: 500}}
classifications:
  - {{account: desk, tool: add_numbers, risk: write}}
"""


def _write(tmp_path: Path, text: str, name: str = "org.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _with_gateway(db_url: str, work: Callable[[Gateway, Principal], Awaitable[T]]) -> T:
    """``work`` on a gateway over ``db_url`` acting as the Operator, as the command line does."""

    async def main() -> T:
        settings = Settings(database_url=db_url, semantic=False)
        async with open_gateway(settings, follow_changes=False) as gw:
            return await work(gw, await members.operator_principal(gw.store))

    return anyio.run(main)


def _lists(db_url: str) -> dict[str, Any]:
    """Every resource's list as the ``list`` commands print it (their views), ids left out."""

    async def read(gw: Gateway, op: Principal) -> dict[str, Any]:
        views: dict[str, list[dict[str, Any]]] = {
            "connections": [
                connections.connection_view(r) for r in await connections.list_connections(gw, op)
            ],
            "members": [members.member_view(m) for m in await members.list_members(gw.store, op)],
            "restrictions": [
                restrictions.rule_view(r) for r in await restrictions.list_restrictions(gw.policy, op)
            ],
            "frozen": await restrictions.list_frozen(gw, op),
            "approvals": [approvals.rule_view(r) for r in await approvals.list_approval_rules(gw.policy, op)],
            "limits": [rate_limits.limit_view(r) for r in await rate_limits.list_limits(gw.policy, op)],
            "classifications": [
                {"account": a, "tool": t, "risk": r}
                for (a, t), r in (await restrictions.list_classifications(gw.policy, op)).items()
            ],
        }
        return {
            k: sorted(json.dumps({f: v for f, v in row.items() if f != "id"}, sort_keys=True) for row in rows)
            for k, rows in views.items()
        }

    return _with_gateway(db_url, read)


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One organization applied from the file to an empty database (the module shares it)."""
    tmp = tmp_path_factory.mktemp("org")
    db_url = f"sqlite:///{tmp / 'org.db'}"
    done = cli(db_url, "apply", "-f", _write(tmp, ORG), env=ENV)
    assert "+ create connection desk" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    return db_url, tmp


def test_26_apply_to_an_empty_organization_creates_every_object(applied: tuple[str, Path]) -> None:
    db_url, _ = applied
    lists = _lists(db_url)
    conns = [json.loads(c) for c in lists["connections"]]
    assert [(c["name"], c["connector"], c["status"], c["pinning"]) for c in conns] == [
        ("desk", "Helpdesk", "active", "review")
    ]
    assert {(m["name"], m["role"]) for m in map(json.loads, lists["members"])} == {
        ("owner", "owner"),
        ("ann", "member"),
        ("bob", "auditor"),
    }
    assert len(lists["restrictions"]) == 2
    by_param = {f["param"]: f for f in map(json.loads, lists["frozen"])}
    assert by_param["priority"]["value"] == "high"
    assert by_param["message"]["secret"] is True
    assert "value" not in by_param["message"]
    assert len(lists["approvals"]) == 1
    assert len(lists["limits"]) == 2
    assert [json.loads(c)["risk"] for c in lists["classifications"]] == ["write"]
    assert SECRET not in json.dumps(lists)


def test_26_each_applied_change_is_an_administrative_audit_row_naming_the_operator(
    applied: tuple[str, Path],
) -> None:
    from toolcrib.gateway.audit.entries import search_audit
    from toolcrib.store.audit import AuditFilter

    db_url, _ = applied
    rows = _with_gateway(
        db_url,
        lambda gw, op: search_audit(gw.store, op, AuditFilter(operation="org_apply:create:connection")),
    )
    assert [(r["kind"], r["member"], r["account"], r["outcome"]) for r in rows] == [
        ("admin", "owner", "desk", "ok")
    ]


def test_26_a_second_apply_changes_nothing_and_plan_exits_0(applied: tuple[str, Path]) -> None:
    db_url, tmp = applied
    before = _lists(db_url)
    path = _write(tmp, ORG, "again.yaml")
    plan = cli(db_url, "plan", "-f", path, env=ENV, check=False)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "no changes" in plan.stdout
    again = _with_gateway(db_url, lambda gw, op: apply_file(gw, op, ORG, "org.yaml", environ=ENV))
    assert again == []
    assert _lists(db_url) == before


def test_26_plan_exits_2_and_shows_a_changed_secret_as_changed_never_its_value(
    applied: tuple[str, Path],
) -> None:
    db_url, tmp = applied
    changed = ORG.replace("value: high", "value: low")
    plan = cli(
        db_url,
        "plan",
        "-f",
        _write(tmp, changed, "changed.yaml"),
        env={"DESK_KEY": "another-value"},
        check=False,
    )
    assert plan.returncode == 2
    assert "another-value" not in plan.stdout
    assert SECRET not in plan.stdout
    assert "env.FIXTURE_API_KEY: (changed)" in plan.stdout
    assert "~ update frozen desk__create_ticket.priority" in plan.stdout
    assert "~ update frozen desk__echo_message.message" in plan.stdout
    assert 'value: "low"' in plan.stdout  # a value that is not secret is shown


def test_26_export_then_apply_to_a_new_database_gives_the_same_lists(
    applied: tuple[str, Path], tmp_path: Path
) -> None:
    db_url, _ = applied
    exported = tmp_path / "exported.yaml"
    cli(db_url, "export", "-o", str(exported))
    text = exported.read_text()
    assert SECRET not in text
    assert "${env:DESK_FIXTURE_API_KEY}" in text
    assert "#   DESK_FIXTURE_API_KEY" in text
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    names = {"DESK_FIXTURE_API_KEY": SECRET, "DESK_ECHO_MESSAGE_MESSAGE": SECRET}
    cli(fresh, "apply", "-f", str(exported), env=names)
    assert _lists(fresh) == _lists(db_url)
    assert _with_gateway(fresh, export_org) == text  # pinning and every section the same


def test_26_prune_deletes_what_the_file_does_not_list_and_plan_lists_deletes_only_with_prune(
    tmp_path: Path,
) -> None:
    fresh = f"sqlite:///{tmp_path / 'prune.db'}"
    smaller = ORG.split("restrictions:")[0].replace("  - {name: bob, role: auditor}\n", "")

    async def work(gw: Gateway, op: Principal) -> tuple[list[str], list[str], list[str]]:
        await apply_file(gw, op, ORG, "org.yaml", environ=ENV)
        kept = [c.line() for c in (await plan_file(gw, op, smaller, "small.yaml", environ=ENV))[1]]
        pruned = [c.line() for c in await apply_file(gw, op, smaller, "small.yaml", prune=True, environ=ENV)]
        after = [
            c.line() for c in (await plan_file(gw, op, smaller, "small.yaml", prune=True, environ=ENV))[1]
        ]
        with pytest.raises(FileError, match="'bob' was a member and was removed"):
            await plan_file(gw, op, ORG, "org.yaml", environ=ENV)  # a removed member's name is not reused
        return kept, pruned, after

    kept, pruned, after = _with_gateway_new(fresh, work)
    assert kept == []
    assert after == []
    assert "- delete member bob" in pruned
    assert any(p.startswith("- delete restriction") for p in pruned)
    lists = _lists(fresh)
    assert all(not lists[k] for k in ("restrictions", "frozen", "approvals", "limits", "classifications"))
    assert [json.loads(m)["name"] for m in lists["members"]] == ["ann", "owner"]


def _with_gateway_new(db_url: str, work: Callable[[Gateway, Principal], Awaitable[T]]) -> T:
    """``work`` on a new database, as its owner ``owner``."""

    async def main() -> T:
        async with open_gateway(Settings(database_url=db_url, semantic=False), follow_changes=False) as gw:
            await members.init_owner(gw.store, "owner")
            return await work(gw, await members.operator_principal(gw.store))

    return anyio.run(main)


@pytest.mark.parametrize(
    ("text", "line", "column", "says"),
    [
        ("members:\n  - {name: ann, role: member\n", 3, 1, "not valid YAML"),
        ("members:\n  - name: ann\n    role: member\n    colour: red\n", 4, 5, "unknown key"),
        ("limits:\n  - role: member\n    per_minute: lots\n", 3, 17, "valid integer"),
        ("members:\n  - {name: ann, role: member}\n  - {name: ann, role: admin}\n", 3, 5, "duplicates"),
        ("restrictions:\n  - {effect: block, role: member, account: nowhere}\n", 2, 44, "'nowhere'"),
        ("limits:\n  - {member: ghost, per_minute: 5}\n", 2, 14, "'ghost'"),
        ("members: !!python/object/apply:os.system [echo hacked]\n", 1, 10, "not allowed"),
        (
            "connections:\n  - {name: crm, connector: CRM, url: 'https://crm.example/mcp',\n"
            "     headers: {A: '${env:NOT_SET_ANYWHERE}'}}\n",
            3,
            19,
            "NOT_SET_ANYWHERE",
        ),
        ("connections:\n  - {name: crm, connector: CRM, url: 'ftp://crm'}\n", 2, 38, "http(s) URL"),
        ("members:\n  - {name: ann, role: wizard}\n", 2, 23, "Input should be"),
        ("restrictions:\n  - {effect: allow, role: member, tool: 'get_*'}\n", 2, 5, "exact"),
    ],
)
def test_26_bad_input_names_line_and_column_and_changes_nothing(
    applied: tuple[str, Path], text: str, line: int, column: int, says: str
) -> None:
    db_url, _ = applied

    async def attempt(gw: Gateway, op: Principal) -> tuple[str, list[dict[str, str]], list[str]]:
        try:
            await apply_file(gw, op, text, "bad.yaml", environ=ENV)
        except FileError as exc:
            return (
                exc.message,
                exc.errors,
                [c.line() for c in (await plan_file(gw, op, ORG, "org.yaml", environ=ENV))[1]],
            )
        raise AssertionError("applied")

    message, errors, still = _with_gateway(db_url, attempt)
    assert f"line {line}, column {column}" in message, message
    assert says in message, message
    assert errors[0]["pointer"] == f"bad.yaml:{line}:{column}"
    assert still == []  # nothing changed: the organization is still exactly the file's


@pytest.mark.usefixtures("cli_processes")  # a real-process smoke test (#33)
def test_26_a_malformed_file_on_the_command_line_exits_1_with_line_and_column(
    applied: tuple[str, Path],
) -> None:
    db_url, tmp = applied
    path = _write(tmp, "members:\n  - name: ann\n    role: [member\n", "broken.yaml")
    done = cli(db_url, "apply", "-f", path, "--json", check=False)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "invalid_arguments"
    assert "broken.yaml: line 4, column 1: not valid YAML" in error["message"]


def test_26_hostile_yaml_is_bounded() -> None:
    laughs = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    for text, says in (
        (laughs, "more than 100000 values"),
        ("a: " + "[" * 200 + "]" * 200 + "\n", "deeper than 32"),
        ("members:\n" + "  - {name: ann, role: member}\n" * 40_000, "over 1048576 bytes"),
        ("--- {}\n--- {}\n", "one YAML document"),
        ("members: !!binary aGk=\n", "not allowed"),
        ("{? [a]: 1}\n", "plain string"),
        ("members: []\nmembers: []\n", "given twice"),
    ):
        with pytest.raises(FileError) as caught:
            check_file(text, "hostile.yaml", Known())
        assert says in caught.value.message, (says, caught.value.message)


def test_26_file_references_are_read_bounded_and_missing_ones_are_named(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-from-a-mounted-file\n")
    text = (
        "connections:\n  - name: crm\n    connector: CRM\n    url: https://crm.example/mcp\n"
        f"    headers: {{Authorization: 'Bearer ${{file:{token}}}'}}\n"
    )
    desired = check_file(text, "org.yaml", Known(), environ={})
    assert desired.org.connections[0].headers == {"Authorization": "Bearer s3cret-from-a-mounted-file"}
    (tmp_path / "huge").write_bytes(b"x" * (64 * 1024 + 1))
    for ref, says in ((tmp_path / "huge", "over 65536 bytes"), (tmp_path / "absent", "cannot be read")):
        with pytest.raises(FileError) as caught:
            check_file(text.replace(str(token), str(ref)), "org.yaml", Known(), environ={})
        assert says in caught.value.message
        assert "line 5" in caught.value.message


def test_26_a_failure_after_some_changes_leaves_the_organization_as_it_was(tmp_path: Path) -> None:
    """The frozen parameter's tool is known only once the file's connections are synced: the apply
    fails there, after the connection was created (then: updated with a new secret), and the
    connection is removed again (then: put back with its old secret) by compensation."""
    db_url = f"sqlite:///{tmp_path / 'half.db'}"
    broken = ORG.replace("parameter: priority", "parameter: no_such_parameter")
    other = {"DESK_KEY": "a-new-secret-value"}

    async def work(gw: Gateway, op: Principal) -> tuple[str, list[str], str, list[str]]:
        with pytest.raises(FileError) as created:
            await apply_file(gw, op, broken, "org.yaml", environ=ENV)
        planned = [c.line() for c in (await plan_file(gw, op, ORG, "org.yaml", environ=ENV))[1]]
        await apply_file(gw, op, ORG, "org.yaml", environ=ENV)
        with pytest.raises(FileError) as updated:
            await apply_file(gw, op, broken.replace("Helpdesk", "Desk"), "org.yaml", environ=other)
        again = [c.line() for c in (await plan_file(gw, op, ORG, "org.yaml", environ=ENV))[1]]
        return created.value.message, planned, updated.value.message, again

    message, planned, message2, again = _with_gateway_new(db_url, work)
    assert "line 16, column 53" in message
    assert "no_such_parameter" in message
    assert any(p.startswith("+ create connection desk") for p in planned)  # it was removed again
    assert "no_such_parameter" in message2
    assert again == []  # the connector and the secret env value are as they were


def test_26_a_gateway_refusal_half_way_undoes_the_members_and_rules_already_made(tmp_path: Path) -> None:
    """A change the gateway refuses after members, restrictions and a limit were made (a limit
    naming a member nobody has, slipped past the file's checks): all of them are undone."""
    from toolcrib.errors import NotFound
    from toolcrib.gateway.orgfile.applying import apply_changes
    from toolcrib.gateway.orgfile.models import LimitSpec
    from toolcrib.gateway.orgfile.planning import Change

    db_url = f"sqlite:///{tmp_path / 'undo.db'}"
    text = """
members: [{name: ann, role: member}, {name: bob, role: admin}]
restrictions: [{effect: block, role: member, tool: "delete_*"}, {effect: block, user: bob}]
limits: [{role: member, per_minute: 60}]
approvals: [{risk: destructive}]
"""

    async def work(gw: Gateway, op: Principal) -> list[str]:
        desired, changes = await plan_file(gw, op, text, "org.yaml")
        ghost = Change("limit", "create", "ghost", desired=LimitSpec(member="ghost", per_minute=1))
        with pytest.raises(NotFound):
            await apply_changes(gw, op, desired, [*changes, ghost])
        return [c.line() for c in (await plan_file(gw, op, text, "org.yaml"))[1]]

    planned = _with_gateway_new(db_url, work)
    assert len(planned) == 6  # everything is still to be created
    lists = _lists(db_url)
    assert [json.loads(m)["name"] for m in lists["members"]] == ["owner"]
    assert all(not lists[k] for k in ("restrictions", "limits", "approvals"))


def test_26_apply_on_a_database_without_owner_makes_the_files_owner_the_operator(tmp_path: Path) -> None:
    from toolcrib.errors import ConfigError
    from toolcrib.gateway.orgfile.service import principal_for_file

    async def main() -> tuple[str, str]:
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'new.db'}", semantic=False)
        async with open_gateway(settings, follow_changes=False) as gw:
            with pytest.raises(ConfigError, match="no owner yet"):
                await principal_for_file(
                    gw.store, "members: [{name: ann, role: member}]", "o.yaml", create_owner=True
                )
            planner = await principal_for_file(
                gw.store, "members: [{name: root, role: owner}]", "o.yaml", create_owner=False
            )
            assert await members.list_members(gw.store, planner) == []  # planning creates nobody
            actor = await principal_for_file(
                gw.store, "members: [{name: root, role: owner}]", "o.yaml", create_owner=True
            )
            return actor.member, actor.role

    assert anyio.run(main) == ("root", "owner")


def test_26_the_committed_json_schema_is_the_generated_one() -> None:
    from toolcrib.gateway.orgfile.models import json_schema

    committed = json.loads((ROOT / "docs" / "toolcrib.schema.json").read_text())
    assert committed == json_schema(), "run: toolcrib schema -o docs/toolcrib.schema.json"


def test_26_r15_2_a_running_replica_sees_what_a_file_applied_on_postgresql(postgres: Any) -> None:
    """Two gateways over one PostgreSQL: the file is applied through one (the command line's
    functions), and the other, already running and already holding its policy, picks up the new
    connection and restriction from the change notifications (LISTEN/NOTIFY), well within the
    policy cache time it would otherwise wait."""
    from tests.conftest import PG_SECRET_KEY

    url = postgres.create_database()
    settings = Settings(database_url=url, semantic=False, secret_key=PG_SECRET_KEY)

    async def main() -> None:
        async with open_gateway(settings, follow_changes=False) as applier:
            await members.init_owner(applier.store, "owner")
            async with open_gateway(settings) as replica:
                assert (await replica.policy.current()).rules == ()  # held for the policy cache time
                await apply_file(
                    applier, await members.operator_principal(applier.store), ORG, "org.yaml", environ=ENV
                )
                with anyio.fail_after(30):
                    while "desk" not in replica.catalog.tools or not (await replica.policy.current()).rules:  # noqa: ASYNC110 - the replica offers no event, bounded
                        await anyio.sleep(0.05)
                assert replica.catalog.connections["desk"].status == "active"
                assert "echo_message" in replica.catalog.tools["desk"]
                assert {r.target for r in (await replica.policy.current()).rules} == {"member", "bob"}
                assert replica.settings.policy_cache_seconds >= 60

    anyio.run(main)
