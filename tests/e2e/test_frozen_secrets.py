"""R-9.2 (issue #21, finding 2): a frozen credential does not come back.

A real ``toolcrib serve`` process in front of the real fixture server over stdio, whose
``fetch_client_data`` echoes its ``api_key`` in free text ("fetched for client …"), in a text block
and in structured content, and again past the 32,000-character cut (R-12.1, R-12.3). An admin
freezes ``api_key`` and ``key`` (secret by default: their names say credential); a member calls
the tool over MCP. The key then appears nowhere the member, an admin or an operator can read: not
in the result, the stored full result paged with ``results__read``, an upstream's error, the audit
entry (never its target id), the gateway's log, any read of the frozen list (command line, REST,
MCP, console), nor in plain text in the database file.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.admin.console import console, sign_in
from tests.conftest import (
    FIXTURE_SERVER,
    ROOT,
    TOOLCRIB,
    Process,
    cli,
    cli_json,
    env_for,
    free_port,
    wait_http,
)
from tests.e2e.mcpclient import connect, gateway_payload, payload
from tests.e2e.org import organization
from toolcrib.gateway.governance import approvals, restrictions
from toolcrib.gateway.identity import members

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.timeout(600)]  # a busy machine

API_KEY = "QUOKKA-7f3a9c2e1b5d"
ENTRY_KEY = "WOMBAT-44c1e08a9f"
TOOL = "desk__fetch_client_data"


@dataclass
class Served:
    gateway: Process
    db: Path
    db_url: str
    owner: str
    member: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("frozen-secrets") / "toolcrib.db"
    url = f"sqlite:///{db}"
    owner = cli_json(url, "init")
    assert isinstance(owner, dict)
    command = " ".join(FIXTURE_SERVER)
    cli(
        url,
        "connections",
        "add",
        "desk",
        "--connector",
        "Helpdesk",
        "--command",
        command,
        "--env",
        "FIXTURE_ECHO_CLIENT=1",
    )
    # No --secret / "secret": both names say credential, so both values are secret by default.
    cli(url, "frozen", "set", "desk", "fetch_client_data", "api_key", json.dumps(API_KEY))
    gateway = _start(url, db.with_suffix(".log"))
    try:
        token = str(owner["token"])
        _rest(
            gateway,
            token,
            "frozen/set",
            {"account": "desk", "tool": "fetch_client_data", "param": "key", "value": json.dumps(ENTRY_KEY)},
        )
        _rest(gateway, token, "members/invite", {"name": "mia", "role": "member"})
        member = _rest(
            gateway, token, "grants/create", {"member": "mia", "scopes": "mcp:tools mcp:read mcp:write"}
        )
        yield Served(gateway, db, url, token, str(member["token"]))
    finally:
        gateway.stop()


def _start(url: str, log_path: Path) -> Process:
    """``toolcrib serve``, its output in ``log_path``; waited for longer than ``start_gateway`` does
    (a machine shared by many test runs can take over 30 s to start it)."""
    port = free_port()
    log = open(log_path, "ab")  # noqa: SIM115 - closed by Process.stop
    proc = subprocess.Popen(
        [*TOOLCRIB, "serve", "--port", str(port), "--database", url],
        cwd=ROOT,
        env=env_for({"TOOLCRIB_SEMANTIC": "false"}),  # search is not what this tests
        stdout=log,
        stderr=log,
    )
    started = Process(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_http(started.url + "/healthz", timeout=180, proc=proc)
    except Exception:
        started.stop()
        raise
    return started


def _rest(gateway: Process, token: str, operation: str, body: dict[str, Any]) -> Any:
    answer = httpx2.post(
        f"{gateway.url}/api/{operation}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def _absent(text: str) -> None:
    assert API_KEY not in text
    assert ENTRY_KEY not in text


async def _pages(client: Any, result_id: str) -> str:
    data, offset = "", 0
    while offset is not None:
        page = await client.call_tool("toolcrib__results__read", {"result_id": result_id, "offset": offset})
        assert not page.is_error, page
        read = gateway_payload(page)["result"]
        data, offset = data + read["data"], read["next_offset"]
    return data


async def test_r9_2_a_frozen_key_echoed_by_the_upstream_never_reaches_the_member(served: Served) -> None:
    async with connect(served.gateway.url, served.member) as client:
        arguments = {"name": "acme", "padding": 40_000}
        done = await client.call_tool("execute_tool", {"tool": TOOL, "arguments": arguments})
        assert not done.is_error, done
        structured = payload(done)
        shown = json.dumps([b.model_dump(mode="json") for b in done.content]) + json.dumps(structured)
        _absent(shown)
        assert structured["summary"] == "fetched for client [REDACTED], entry [REDACTED]"
        assert structured["toolcrib_truncated"] is True
        # the full result, stored because it was cut, holds the tail the cut left out.
        full = await _pages(client, structured["toolcrib_result_id"])
        assert "(client [REDACTED])" in full
        _absent(full)
        # An upstream's error naming the key is redacted like its results.
        failed = await client.call_tool("execute_tool", {"tool": TOOL, "arguments": {"fail": True}})
        assert failed.is_error
        assert gateway_payload(failed)["error"]["code"] == "upstream_error"
        _absent(json.dumps(gateway_payload(failed)))


async def test_r9_2_the_audit_entry_holds_no_secret_and_a_secret_key_is_never_its_target(
    served: Served,
) -> None:
    async with connect(served.gateway.url, served.member) as client:
        done = await client.call_tool("execute_tool", {"tool": TOOL, "arguments": {"name": "acme"}})
        assert not done.is_error, done
    # Every column of the rows, read from the database itself.
    with sqlite3.connect(served.db) as db:
        db.row_factory = sqlite3.Row
        entries = [dict(r) for r in db.execute("SELECT * FROM audit WHERE operation = ?", (TOOL,))]
    assert entries
    _absent(json.dumps(entries, default=str))
    # ``key`` comes before ``name`` in R-11.2's preference, but a secret is never the target.
    assert max(entries, key=lambda e: e["id"])["target_id"] == "acme"
    assert {e["target_id"] for e in entries} <= {"acme", None}  # a call without a name has none


async def test_r9_2_every_read_of_the_frozen_list_says_secret_and_set_never_the_value(
    served: Served,
) -> None:
    listed = cli_json(served.db_url, "frozen", "list")
    assert isinstance(listed, list)
    assert {(r["param"], r["secret"], r.get("set")) for r in listed} == {
        ("api_key", True, True),
        ("key", True, True),
    }
    assert all("value" not in r for r in listed)
    table = cli(served.db_url, "frozen", "list").stdout
    assert "secret, set" in table
    reads = [json.dumps(listed), table]
    async with httpx2.AsyncClient(base_url=served.gateway.url, timeout=60) as http:
        rest = await http.post(
            "/api/frozen/list", json={}, headers={"Authorization": f"Bearer {served.owner}"}
        )
        assert rest.status_code == 200
        assert {r["param"] for r in rest.json()["result"]} == {"api_key", "key"}
        reads.append(rest.text)
        await sign_in(http, served.owner)
        page = await http.get("/admin/frozen")
        assert page.status_code == 200
        assert "secret, set" in page.text
        reads.append(page.text)
    async with connect(served.gateway.url, served.owner) as client:
        mcp = await client.call_tool("toolcrib__frozen__list", {})
        assert not mcp.is_error
        reads.append(json.dumps(gateway_payload(mcp)))
    for read in reads:
        _absent(read)


async def test_r9_2_a_member_cannot_read_the_frozen_list(served: Served) -> None:
    async with connect(served.gateway.url, served.member) as client:
        refused = await client.call_tool("toolcrib__frozen__list", {})
    error = gateway_payload(refused)["error"]
    assert (error["code"], error["permission"]) == ("permission_required", "connections:write")


def test_r9_2_the_database_and_the_log_hold_no_plain_copy(served: Served) -> None:
    """The last test of the served gateway: it stops it, so its log is flushed."""
    served.gateway.stop()
    files = [p for p in served.db.parent.iterdir() if p.name.startswith(served.db.name)]
    assert files
    for path in files:
        data = path.read_bytes()
        assert API_KEY.encode() not in data, path
        assert ENTRY_KEY.encode() not in data, path
    log = served.db.with_suffix(".log")
    assert log.exists()
    _absent(log.read_text())


# --- in-process: what a call answers about a secret value it could not send -----------------------


@pytest.mark.usefixtures("on_each_store")  # the sealed row written and read back on both stores
async def test_r9_2_a_secret_value_failing_the_schema_is_not_quoted_in_invalid_arguments(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        operator = await members.operator_principal(org.gw.store)
        await restrictions.set_frozen(org.gw, operator, "desk", "add_numbers", "a", API_KEY, secret=True)
        mia = await org.token("mia")
        refused = gateway_payload(await org.execute(mia, "desk__add_numbers", {"b": 1}))["error"]
        assert refused["code"] == "invalid_arguments"
        assert [e["pointer"] for e in refused["errors"]] == ["/a"]
        _absent(json.dumps(refused))
        # Not secret, the same value is quoted as before (the schema's message names it).
        await restrictions.set_frozen(org.gw, operator, "desk", "add_numbers", "a", API_KEY, secret=False)
        quoted = gateway_payload(await org.execute(mia, "desk__add_numbers", {"b": 1}))["error"]
        assert API_KEY in json.dumps(quoted)


async def test_r9_2_an_approval_shows_a_secret_value_redacted_to_the_member_and_the_approver(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        operator = await members.operator_principal(org.gw.store)
        await approvals.set_approval_rule(org.gw, "write", actor=operator)
        await restrictions.set_frozen(
            org.gw, operator, "desk", "echo_message", "message", API_KEY, secret=True
        )
        mia = await org.token("mia")
        held = gateway_payload(await org.execute(mia, "desk__echo_message", {"count": 2}))["error"]
        assert held["code"] == "approval_required"
        _absent(json.dumps(held))
        details = await approvals.approval_details(org.gw, held["approval_id"], operator)
        assert details["arguments"] == {"message": "[REDACTED]", "count": 2}


async def test_r9_2_the_console_freezes_a_value_as_secret_and_shows_it_only_as_set(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org, console(org.gw) as c:
        http, csrf = await c.signed_in(org.owner)
        form = {"csrf": csrf, "tool": "desk__echo_message", "param": "message", "value": json.dumps(API_KEY)}
        posted = await http.post("/admin/frozen/set", data={**form, "secret": "yes"})
        assert posted.status_code == 303
        operator = await members.operator_principal(org.gw.store)
        listed = await restrictions.list_frozen(org.gw, operator)
        assert [(r["param"], r["secret"]) for r in listed] == [("message", True)]
        page = await http.get("/admin/frozen")
        assert "secret, set" in page.text
        _absent(page.text)
        # "not secret" keeps a credential-like value readable, as --no-secret does.
        await http.post("/admin/frozen/set", data={**form, "secret": "no"})
        assert [r.get("value") for r in await restrictions.list_frozen(org.gw, operator)] == [API_KEY]
