"""Policy may name what is not there yet (R-13.8, #32 finding 9): an organization file whose
connection's server is down applies, and what it says of that server's tools is enforced from the
first sync that brings them.

Real parts: a real SQLite file, the real ``toolcrib`` command line, a URL connection to a loopback
port where nothing listens yet, then the fixture MCP server (over Streamable HTTP) started on that
very port, and the gateway refreshing the connection and running the tool in-process through the
one execution pipeline (the MCP and REST faces' operations through the ``ControlPlane`` they share;
the console's pages in-process through the real app).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from tests.admin.console import console
from tests.conftest import FIXTURE_SERVER, ROOT, Process, cli, env_for, free_port, wait_http
from tests.e2e.inprocess import open_gateway as open_test_gateway
from tests.e2e.inprocess import owner_token, settings_for

from toolcrib.errors import InBandError
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.control import ControlPlane
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery import tools
from toolcrib.gateway.discovery.search import search_tools
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity import members
from toolcrib.gateway.process import open_gateway
from toolcrib.policy.frozen import ACTIVE, NO_PARAMETER, WAITING
from toolcrib.policy.gates import Principal
from toolcrib.policy.scopes import SCOPES
from toolcrib.settings import Settings

T = TypeVar("T")
ANN = Principal(member="ann", role="member", scopes=SCOPES, grant_id="test")

CREATE_CONTACT = {
    "name": "create_contact",
    "description": "Create a contact.",
    "inputSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "region": {"type": "string"}},
        "required": ["name"],
    },
    "annotations": {"readOnlyHint": False},
}
DELETE_CONTACT = {
    "name": "delete_contact",
    "description": "Delete a contact by id.",
    "inputSchema": {"type": "object", "properties": {"contact_id": {"type": "string"}}},
    "annotations": {"readOnlyHint": False},
}
SEARCH_CONTACTS = {
    "name": "search_contacts",
    "description": "Search contacts by name.",
    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    "annotations": {"readOnlyHint": True},
}
# The same tool as the server ships it later without the parameter the file froze (an open schema:
# without the hold, the frozen value would be sent as an undeclared argument and ignored).
CREATE_CONTACT_NO_REGION = {
    **CREATE_CONTACT,
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
}


def org_text(url: str) -> str:
    return f"""
connections:
  - name: crm
    connector: CRM
    url: {url}
members:
  - {{name: owner, role: owner}}
  - {{name: ann, role: member}}
restrictions:
  - {{effect: block, role: member, account: crm, tool: delete_contact}}
frozen:
  - {{account: crm, tool: create_contact, parameter: region, value: eu}}
approvals:
  - {{risk: destructive, account: crm}}
limits:
  - {{member: ann, account: crm, tool: create_contact, per_day: 50}}
classifications:
  - {{account: crm, tool: delete_contact, risk: destructive}}
"""


@dataclass
class Org:
    db_url: str
    tmp: Path
    port: int
    file: str
    applied: subprocess.CompletedProcess[str]


def _apply_down(tmp: Path) -> Org:
    """The file applied while nothing listens at the connection's port."""
    port = free_port()
    path = tmp / "org.yaml"
    path.write_text(org_text(f"http://127.0.0.1:{port}/mcp"), encoding="utf-8")
    db_url = f"sqlite:///{tmp / 'org.db'}"
    done = cli(db_url, "apply", "-f", str(path), check=False)
    return Org(db_url, tmp, port, str(path), done)


def _serve(org: Org, catalog: list[dict[str, Any]]) -> Process:
    """The fixture MCP server, now up on the connection's port, serving ``catalog``."""
    rows = org.tmp / "catalog.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in catalog), encoding="utf-8")
    env = {"FIXTURE_CATALOG_FILE": str(rows), "FIXTURE_CALL_LOG": str(org.tmp / "calls.log")}
    proc = subprocess.Popen(
        [*FIXTURE_SERVER, "--http", str(org.port)], cwd=ROOT, env=env_for(env), stderr=subprocess.DEVNULL
    )
    server = Process(proc, f"http://127.0.0.1:{org.port}/mcp")
    try:
        wait_http(f"http://127.0.0.1:{org.port}/", proc=proc)
    except Exception:
        server.stop()
        raise
    return server


def _calls(org: Org) -> list[str]:
    log = org.tmp / "calls.log"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def _with_gateway(db_url: str, work: Callable[[Gateway, Principal], Awaitable[T]]) -> T:
    async def main() -> T:
        settings = Settings(database_url=db_url, semantic=False)
        async with open_gateway(settings, follow_changes=False) as gw:
            return await work(gw, await members.operator_principal(gw.store))

    return anyio.run(main)


async def _code(call: Awaitable[object]) -> tuple[str, dict[str, Any]]:
    try:
        await call
    except InBandError as exc:
        return exc.code, exc.to_payload()["error"]
    raise AssertionError("the call was not refused")


@pytest.fixture(scope="module")
def down(tmp_path_factory: pytest.TempPathFactory) -> Org:
    return _apply_down(tmp_path_factory.mktemp("down"))


def test_r13_8_a_file_applies_while_its_connections_server_is_down_and_plan_then_exits_0(down: Org) -> None:
    assert down.applied.returncode == 0, down.applied.stdout + down.applied.stderr
    assert "waiting for the tool" in down.applied.stdout
    plan = cli(down.db_url, "plan", "-f", down.file, "--json", check=False)
    assert plan.returncode == 0, plan.stdout + plan.stderr  # no perpetual difference
    shown = json.loads(plan.stdout)
    assert shown["changes"] == []
    assert {(w["kind"], w["name"], w["status"]) for w in shown["waiting"]} == {
        ("frozen", "crm__create_contact.region", WAITING),
        ("restriction", "role member blocks account crm tool delete_contact", WAITING),
        ("limit", "member ann on crm__create_contact", WAITING),
        ("classification", "crm__delete_contact", WAITING),
    }


def test_r13_8_every_face_lists_what_waits_for_its_tool(down: Org) -> None:
    async def read(gw: Gateway, op: Principal) -> dict[str, Any]:
        control = ControlPlane(gw)
        prefix = gw.settings.control_prefix
        return {
            "status": gw.catalog.connections["crm"].status,
            "mcp": (await control.call(op, f"{prefix}__frozen__list", {}))["result"],
            "rest": (await control.call(op, f"{prefix}__restrictions__list", {}, over_mcp=False))["result"],
        }

    seen = _with_gateway(down.db_url, read)
    assert seen["status"] == "error"  # the server cannot be reached: the gateway still starts
    assert [(f["param"], f["status"]) for f in seen["mcp"]] == [("region", WAITING)]
    assert [r["status"] for r in seen["rest"]] == [WAITING]
    table = cli(down.db_url, "frozen", "list", "--json")
    assert [(r["tool"], r["param"], r["value"], r["status"]) for r in json.loads(table.stdout)] == [
        ("create_contact", "region", "eu", WAITING)
    ]


def test_r13_8_r9_1_the_tool_appearing_runs_with_the_frozen_value_the_caller_cannot_override(
    down: Org,
) -> None:
    """The last test of the module's organization: the server comes up, and stays up after."""
    server = _serve(down, [CREATE_CONTACT, DELETE_CONTACT])

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        await connections.refresh_connection(gw, "crm", op)
        ran = await execute_tool(
            gw, op, tool="crm__create_contact", arguments={"name": "Ada", "region": "us"}
        )
        listed = await restrictions.list_frozen(gw, op)
        risks = {t["name"]: t["risk"] for t in await tools.list_tools(gw, op, "crm")}
        blocked = await _code(
            execute_tool(gw, ANN, tool="crm__delete_contact", arguments={"contact_id": "1"})
        )
        return {"ran": ran, "listed": listed, "risks": risks, "blocked": blocked[0]}

    try:
        seen = _with_gateway(down.db_url, work)
    finally:
        server.stop()
    assert seen["ran"]["structuredContent"]["received"] == {"name": "Ada", "region": "eu"}
    assert [f["status"] for f in seen["listed"]] == [ACTIVE]
    assert seen["risks"]["crm__delete_contact"] == "destructive"  # the classification applies
    assert seen["blocked"] == "restricted"  # and the restriction
    assert _calls(down) == ["create_contact"]
    plan = cli(down.db_url, "plan", "-f", down.file, "--json", check=False)
    assert (plan.returncode, json.loads(plan.stdout)["waiting"]) == (0, [])


def test_r13_8_a_tool_that_appears_without_its_frozen_parameter_is_held_never_run_without_it(
    tmp_path: Path,
) -> None:
    org = _apply_down(tmp_path)
    assert org.applied.returncode == 0, org.applied.stdout + org.applied.stderr
    server = _serve(org, [CREATE_CONTACT_NO_REGION, DELETE_CONTACT, SEARCH_CONTACTS])

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        await connections.refresh_connection(gw, "crm", op)
        held = await _code(execute_tool(gw, op, tool="crm__create_contact", arguments={"name": "Ada"}))
        found = await search_tools(gw, op, "create a contact", limit=5)
        other = await execute_tool(gw, op, tool="crm__search_contacts", arguments={"query": "Ada"})
        asked = await _code(execute_tool(gw, op, tool="crm__delete_contact", arguments={"contact_id": "7"}))
        listed = await restrictions.list_frozen(gw, op)
        return {"held": held, "other": other, "asked": asked[0], "listed": listed, "found": found}

    try:
        seen = _with_gateway(org.db_url, work)
    finally:
        server.stop()
    code, error = seen["held"]
    assert (code, error["frozen"]) == ("forbidden", ["region"])
    assert "crm__create_contact" not in json.dumps(seen["found"])  # nor offered by search
    assert seen["asked"] == "approval_required"  # the approval rule of its classification applies
    assert _calls(org) == ["search_contacts"]  # the held tool never reached the upstream
    assert [f["status"] for f in seen["listed"]] == [NO_PARAMETER]
    plan = cli(org.db_url, "plan", "-f", org.file, "--json", check=False)
    assert json.loads(plan.stdout)["waiting"] == [
        {"kind": "frozen", "name": "crm__create_contact.region", "status": NO_PARAMETER}
    ]


def test_r13_8_frozen_set_on_a_connection_without_tools_answers_waiting(tmp_path: Path) -> None:
    path = tmp_path / "conn.yaml"
    port = free_port()
    path.write_text(
        "connections:\n"
        f"  - {{name: crm, connector: CRM, url: 'http://127.0.0.1:{port}/mcp'}}\n"
        "members:\n  - {name: owner, role: owner}\n",
        encoding="utf-8",
    )
    db_url = f"sqlite:///{tmp_path / 'imperative.db'}"
    cli(db_url, "apply", "-f", str(path))
    done = cli(db_url, "frozen", "set", "crm", "create_contact", "region", '"eu"', check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "waiting for the tool" in done.stdout
    classified = cli(db_url, "tools", "classify", "crm", "delete_contact", "destructive", check=False)
    assert (classified.returncode, "waiting for the tool" in classified.stdout) == (0, True)
    absent = cli(db_url, "frozen", "set", "nocrm", "create_contact", "region", '"eu"', check=False)
    assert (absent.returncode, absent.stderr.split(":")[0]) == (1, "not_found")  # no such connection

    async def over_mcp(gw: Gateway, op: Principal) -> Any:
        name = f"{gw.settings.control_prefix}__frozen__set"
        args = {"account": "crm", "tool": "update_contact", "param": "region", "value": '"eu"'}
        return (await ControlPlane(gw).call(op, name, args))["result"]

    answer = _with_gateway(db_url, over_mcp)
    assert (answer["frozen"], answer["status"]) == ("crm__update_contact.region", WAITING)


@pytest.mark.anyio
async def test_r13_8_the_console_pages_show_what_waits_for_its_tool(tmp_path: Path) -> None:
    async with open_test_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        op = await members.operator_principal(gw.store)
        url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
        row = await connections.add_connection(gw, "crm", connector="CRM", url=url, actor=op)
        assert row.status == "error"
        await restrictions.set_frozen(gw, op, "crm", "create_contact", "region", "eu")
        await restrictions.add_restriction(
            gw.store,
            effect="block",
            target_kind="role",
            target="member",
            account="crm",
            tool="purge_all",
            actor=op,
        )
        async with console(gw) as c:
            http, _ = await c.signed_in(token)
            frozen = (await http.get("/admin/frozen")).text
            rules = (await http.get("/admin/restrictions")).text
    assert '<td class="status">waiting for the tool</td>' in frozen
    assert "(waiting for the tool)" in rules
