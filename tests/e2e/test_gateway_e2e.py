"""The gateway end to end: a real process, real upstreams (stdio and HTTP), the official SDK client.

SPEC sections 2, 3, 6 and 13 (issue #2).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import PYTHON, Process, cli, cli_json, start_gateway
from tests.e2e.mcpclient import connect, error_code, payload

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

FIXTURE_KEY = "fixture-secret-key-123456"
TIME_SERVER = str(Path(PYTHON).parent / "mcp-server-time")


class Org:
    def __init__(self, db_url: str, token: str, gateway: Process) -> None:
        self.db_url, self.token, self.gateway = db_url, token, gateway


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def org(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fixture_http: Process
) -> Iterator[Org]:
    """The whole module runs once on a SQLite file and once on a real PostgreSQL server (#11)."""
    folder = tmp_path_factory.mktemp("org")
    db_url = f"sqlite:///{folder / 'toolcrib.db'}"
    if request.param == "postgresql":
        db_url = request.getfixturevalue("postgres").create_database()
    token = cli_json(db_url, "init")["token"]  # type: ignore[index]
    cli(db_url, "connections", "add", "time", "--connector", "Time", "--command", TIME_SERVER)
    cli(
        db_url, "connections", "add", "helpdesk", "--connector", "Helpdesk",
        "--command", f"{PYTHON} -m tests.fixtures.fixture_server", "--env", f"FIXTURE_API_KEY={FIXTURE_KEY}",
    )  # fmt: skip
    cli(db_url, "connections", "add", "helpdesk-http", "--connector", "Helpdesk", "--url", fixture_http.url)
    gateway = start_gateway(db_url, {"TOOLCRIB_UPSTREAM_TIMEOUT_SECONDS": "3"}, log_path=folder / "gw.log")
    yield Org(db_url, str(token), gateway)
    gateway.stop()


async def call(org: Org, name: str, arguments: dict[str, Any]) -> Any:
    async with connect(org.gateway.url, org.token) as client:
        return await client.call_tool(name, arguments)


async def test_r2_2_tools_list_holds_no_connected_tool(org: Org) -> None:
    async with connect(org.gateway.url, org.token) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names[:2] == ["search_tools", "execute_tool"]
    assert not any("__" in n and not n.startswith("toolcrib__") for n in names)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("current time in a timezone", "time__get_current_time"),
        ("echo a message", "helpdesk__echo_message"),
        ("add two numbers", "helpdesk__add_numbers"),
    ],
)
async def test_r3_1_search_finds_the_right_tool_first(org: Org, query: str, expected: str) -> None:
    found = payload(await call(org, "search_tools", {"query": query, "limit": 5}))
    names = [c["name"] for c in found["results"]]
    assert names
    assert names[0] in {expected, expected.replace("helpdesk__", "helpdesk-http__")}
    assert all(c["action_id"].startswith("act_") and len(c["action_id"]) == 30 for c in found["results"])


async def test_r3_2_execute_returns_the_upstream_result_by_name_and_by_handle(org: Org) -> None:
    by_name = payload(
        await call(org, "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 2, "b": 3}})
    )
    assert by_name == {"sum": 5.0}
    found = payload(await call(org, "search_tools", {"query": "current time timezone"}))
    handle = next(c["action_id"] for c in found["results"] if c["name"] == "time__get_current_time")
    result = payload(
        await call(org, "execute_tool", {"action_id": handle, "arguments": {"timezone": "Europe/Berlin"}})
    )
    assert result["timezone"] == "Europe/Berlin"
    assert "datetime" in result


async def test_r3_2_execute_over_streamable_http_upstream(org: Org) -> None:
    result = payload(
        await call(
            org, "execute_tool", {"tool": "helpdesk-http__echo_message", "arguments": {"message": "hi"}}
        )
    )
    assert result["received"] == {"message": "hi"}


async def test_r4_4_aliased_argument_reaches_upstream_by_exact_provider_name(org: Org) -> None:
    found = payload(
        await call(org, "search_tools", {"query": "create a support ticket helpdesk", "limit": 5})
    )
    card = next(c for c in found["results"] if c["name"] == "helpdesk__create_ticket")
    alias = next(i["name"] for i in card["inputs"] if i["name"].startswith("param_"))
    args = {"title": "printer on fire", alias: "ann@example.com"}
    result = payload(await call(org, "execute_tool", {"action_id": card["action_id"], "arguments": args}))
    assert result["received"] == {"title": "printer on fire", "Customer Email": "ann@example.com"}


async def test_r3_3_wrong_type_answers_invalid_arguments_with_pointer(org: Org) -> None:
    result = await call(
        org, "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": "two", "b": 3}}
    )
    assert error_code(result) == "invalid_arguments"
    assert [e["pointer"] for e in payload(result)["error"]["errors"]] == ["/a"]


async def test_r3_3_missing_required_answers_needs_input_naming_it(org: Org) -> None:
    result = await call(org, "execute_tool", {"tool": "helpdesk__echo_message", "arguments": {}})
    assert error_code(result) == "needs_input"
    missing = payload(result)["error"]["missing"]
    assert missing[0]["name"] == "message"
    assert missing[0]["type"] == "string"


async def test_r3_3_unknown_tool_answers_not_found(org: Org) -> None:
    assert error_code(await call(org, "execute_tool", {"tool": "helpdesk__nope"})) == "not_found"
    assert error_code(await call(org, "execute_tool", {"tool": "nowhere__nope"})) == "not_found"
    assert error_code(await call(org, "execute_tool", {"action_id": "act_" + "a" * 26})) == "not_found"


async def test_r13_2_crashed_stdio_upstream_errors_once_then_recovers(org: Org) -> None:
    crash = await call(org, "execute_tool", {"tool": "helpdesk__crash_server"})
    assert error_code(crash) == "upstream_error"
    after = payload(
        await call(org, "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 1}})
    )
    assert after == {"sum": 2.0}


async def test_r13_2_hanging_upstream_answers_upstream_timeout(org: Org) -> None:
    result = await call(
        org, "execute_tool", {"tool": "helpdesk__slow_operation", "arguments": {"seconds": 30}}
    )
    assert error_code(result) == "upstream_timeout"
    assert payload(
        await call(org, "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 2}})
    )


async def test_r12_2_connection_secret_and_jwt_are_redacted(org: Org) -> None:
    result = payload(await call(org, "execute_tool", {"tool": "helpdesk__reveal_config"}))
    assert result["api_key"] == "[REDACTED]"
    assert result["session"] == "[REDACTED]"
    assert result["region"] == "eu-west-1"


def test_r2_4_missing_or_wrong_token_is_401_with_www_authenticate(org: Org) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer tcp_wrong"}):
        response = httpx2.post(org.gateway.url + "/mcp", json=body, headers=headers)
        assert response.status_code == 401
        assert "oauth-protected-resource" in response.headers["www-authenticate"]


def _post(org: Org, content: bytes, **headers: str) -> httpx2.Response:
    base = {
        "Authorization": f"Bearer {org.token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return httpx2.post(org.gateway.url + "/mcp", content=content, headers=base | headers, timeout=30)


def test_r2_4_body_over_4_mib_is_refused_and_gateway_keeps_serving(org: Org) -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "y" * (5 * 1024 * 1024)}})
    assert _post(org, big.encode()).status_code == 413
    assert httpx2.get(org.gateway.url + "/healthz").json()["status"] == "ok"


def test_malformed_json_rpc_is_a_clear_error(org: Org) -> None:
    response = _post(org, b"{not json")
    assert 400 <= response.status_code < 500
    assert "error" in response.json()


def test_r2_4_foreign_browser_origin_is_refused(org: Org) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    assert _post(org, body, Origin="http://evil.example").status_code == 403


def test_r13_1_upstream_command_that_does_not_exist_is_error_with_reason(org: Org) -> None:
    added = cli(
        org.db_url,
        "connections",
        "add",
        "ghost",
        "--connector",
        "Ghost",
        "--command",
        "/no/such/server",
        check=False,
    )
    assert added.returncode == 1  # a connection left in error fails the command, with its reason (#13)
    assert added.stderr.startswith("connection_inactive:")
    rows = cli_json(org.db_url, "connections", "list")
    ghost = next(r for r in rows if r["name"] == "ghost")  # type: ignore[union-attr]
    assert ghost["status"] == "error"
    assert "/no/such/server" in ghost["reason"]
    assert httpx2.get(org.gateway.url + "/healthz").status_code == 200


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_cli_search_and_call_use_the_same_pipeline(org: Org) -> None:
    out = cli_json(org.db_url, "search", "convert time between timezones")
    assert out["results"][0]["name"] == "time__convert_time"  # type: ignore[index]
    bad = cli(org.db_url, "call", "helpdesk__add_numbers", "--args", '{"a": "x", "b": 1}', check=False)
    assert bad.returncode == 1
    assert "invalid_arguments" in bad.stderr
