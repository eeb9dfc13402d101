"""Catalog sync, limits, handles, the giant fixture and the capability surface, over real HTTP.

SPEC R-2.1, R-2.5, R-4.1, R-4.2, R-4.9, R-5.10, section 6 steps 1 and 5 (issues #2 and #3).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import PYTHON, start_fixture_http
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, error_code, gateway_payload, payload
from tests.fixtures.giant_tool import GIANT_TOOL_NAME, LURE_MARKERS
from tests.principals import OPERATOR
from toolcrib.gateway.connections import pins
from toolcrib.gateway.connections.manage import add_connection, refresh_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.surface import meta_tool_definitions
from toolcrib.gateway.identity import members

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

FIXTURE = [PYTHON, "-m", "tests.fixtures.fixture_server"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def _desk(gw: Gateway, state: Path | None = None, name: str = "desk") -> None:
    env = {"FIXTURE_STATE_FILE": str(state)} if state else {}
    row = await add_connection(gw, name, connector="Helpdesk", command=FIXTURE, env=env, actor=OPERATOR)
    assert row.status == "active", row.reason


async def test_r4_2_catalog_over_5000_tools_is_refused_and_previous_catalog_stays(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    async with open_gateway(settings_for(tmp_path)) as gw:
        await _desk(gw, state)
        before = set(gw.catalog.tools["desk"])
        state.write_text(json.dumps({"extra_tools": 5001}))
        row = await refresh_connection(gw, "desk", principal=OPERATOR)
        assert row.status == "error"
        assert row.reason is not None
        assert "5,000" in row.reason
        assert set(gw.catalog.tools["desk"]) == before  # the previous catalog is kept, not live
        assert len(gw.index) == 0
        state.write_text(json.dumps({"extra_tools": 3}))
        assert (await refresh_connection(gw, "desk", principal=OPERATOR)).status == "active"
        assert len(gw.catalog.tools["desk"]) == len(before) + 3


async def test_r4_1_list_changed_notification_resyncs_the_catalog(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        await _desk(gw)
        assert "quarterly_report" not in gw.catalog.tools["desk"]
        async with serve(gw) as base, connect(base, token) as client:
            await client.call_tool("execute_tool", {"tool": "desk__grow_catalog"})
            with anyio.fail_after(15):
                while "quarterly_report" not in gw.catalog.tools["desk"]:  # noqa: ASYNC110 - bounded above
                    await anyio.sleep(0.05)
            found = gateway_payload(
                await client.call_tool("search_tools", {"query": "quarterly revenue report"})
            )
    assert found["results"][0]["name"] == "desk__quarterly_report"


async def test_r5_10_handle_expires_after_10_minutes(tmp_path: Path) -> None:
    clock = Clock()
    async with open_gateway(settings_for(tmp_path), clock=clock) as gw:
        token = await owner_token(gw)
        await _desk(gw)
        async with serve(gw) as base, connect(base, token) as client:
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            handle = found["results"][0]["action_id"]
            args = {"action_id": handle, "arguments": {"a": 1, "b": 2}}
            clock.now += 599
            assert payload(await client.call_tool("execute_tool", args)) == {"sum": 3.0}
            clock.now += 2
            assert error_code(await client.call_tool("execute_tool", args)) == "handle_expired"


async def test_r5_10_another_members_handle_is_not_found(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        owner = await owner_token(gw)
        await members.add_member(gw.store, "bea", "member", actor=OPERATOR)
        _, bea = await members.create_token(gw.store, "bea", "mcp:tools,mcp:read,mcp:write", actor=OPERATOR)
        await _desk(gw)
        async with serve(gw) as base:
            async with connect(base, owner) as client:
                found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            handle = found["results"][0]["action_id"]
            async with connect(base, bea) as client:
                result = await client.call_tool(
                    "execute_tool", {"action_id": handle, "arguments": {"a": 1, "b": 2}}
                )
    assert error_code(result) == "not_found"


async def test_r5_10_changed_upstream_schema_answers_schema_changed(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        await _desk(gw, state)
        async with serve(gw) as base, connect(base, token) as client:
            found = gateway_payload(await client.call_tool("search_tools", {"query": "echo a message back"}))
            card = next(c for c in found["results"] if c["name"] == "desk__echo_message")
            state.write_text(json.dumps({"variant": "loud"}))
            await refresh_connection(gw, "desk", principal=OPERATOR)
            # held until accepted; accepted, an old handle still names the old schema
            await pins.accept_change(gw, OPERATOR, "desk", "echo_message")
            args = {"action_id": card["action_id"], "arguments": {"message": "hi"}}
            assert error_code(await client.call_tool("execute_tool", args)) == "schema_changed"
            again = gateway_payload(await client.call_tool("search_tools", {"query": "echo a message back"}))
            fresh = next(c for c in again["results"] if c["name"] == "desk__echo_message")
            args["action_id"] = fresh["action_id"]
            assert payload(await client.call_tool("execute_tool", args))["received"] == {"message": "hi"}


def _surface_bytes(found: dict[str, Any]) -> int:
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    return len(json.dumps(meta_tool_definitions("search"), **compact).encode()) + len(  # type: ignore[arg-type]
        json.dumps(found, **compact).encode()  # type: ignore[arg-type]
    )


async def test_r4_9_giant_tool_surface_is_small_clean_and_executes_exactly(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        await _desk(gw)
        record = gw.catalog.tools["desk"][GIANT_TOOL_NAME].record
        async with serve(gw) as base, connect(base, token) as client:
            found = gateway_payload(
                await client.call_tool("search_tools", {"query": "bulk update records", "limit": 1})
            )
            card = found["results"][0]
            assert card["name"] == f"desk__{GIANT_TOOL_NAME}"
            assert card["complete"] is False
            text = json.dumps(found, ensure_ascii=False).lower()
            assert not [m for m in LURE_MARKERS if m.lower() in text]
            assert _surface_bytes(found) < 3_000
            args = {i["name"]: f"v{n}" for n, i in enumerate(card["inputs"]) if i["required"]}
            args |= {i["name"]: "aliased" for i in card["inputs"] if i["name"].startswith("param_")}
            call = {"action_id": card["action_id"], "arguments": args}
            done = payload(await client.call_tool("execute_tool", call))
    assert done["received"] == {record.aliases[alias]: value for alias, value in args.items()}
    assert any(record.aliases[alias] != alias for alias in args), "no aliased field was exercised"


async def test_r2_5_capability_surface_serves_the_same_engine(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path, surface="capability")) as gw:
        token = await owner_token(gw)
        await _desk(gw)
        async with serve(gw) as base, connect(base, token) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names[:2] == ["discover_capability", "run_capability"]
            assert "search_tools" not in names
            found = gateway_payload(
                await client.call_tool("discover_capability", {"intent": "add two numbers"})
            )
            handle = found["results"][0]["action_id"]
            result = await client.call_tool(
                "run_capability", {"actionId": handle, "params": {"a": 4, "b": 5}}
            )
            assert payload(result) == {"sum": 9.0}
            assert error_code(await client.call_tool("search_tools", {"query": "x"})) == "not_found"


async def test_r2_1_endpoint_works_with_sessions_too(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path, stateless=False)) as gw:
        token = await owner_token(gw)
        await _desk(gw)
        async with serve(gw) as base, connect(base, token) as client:
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            handle = found["results"][0]["action_id"]
            result = await client.call_tool(
                "execute_tool", {"action_id": handle, "arguments": {"a": 1, "b": 1}}
            )
    assert payload(result) == {"sum": 2.0}


async def test_r13_1_refused_credentials_set_needs_reauth_and_the_tools_are_absent(tmp_path: Path) -> None:
    guarded = start_fixture_http({"FIXTURE_REQUIRE_BEARER": "open-sesame-42"})
    try:
        async with open_gateway(settings_for(tmp_path)) as gw:
            token = await owner_token(gw)
            row = await add_connection(gw, "locked", connector="Helpdesk", url=guarded.url, actor=OPERATOR)
            assert row.status == "needs_reauth"
            assert row.reason is not None
            assert "401" in row.reason
            good = {"Authorization": "Bearer open-sesame-42"}
            assert (
                await add_connection(
                    gw, "opened", connector="Helpdesk", url=guarded.url, headers=good, actor=OPERATOR
                )
            ).status == ("active")
            async with serve(gw) as base, connect(base, token) as client:
                found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
                assert [c["name"] for c in found["results"]][:1] == ["opened__add_numbers"]
                refused = await client.call_tool("execute_tool", {"tool": "locked__add_numbers"})
                assert error_code(refused) == "connection_inactive"
                assert gateway_payload(refused)["error"]["status"] == "needs_reauth"
    finally:
        guarded.stop()
