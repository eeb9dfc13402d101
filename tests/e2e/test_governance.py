"""Governance end to end (issue #5): roles, scopes, restrictions, frozen values, grants, the control plane.

Every test drives a real gateway served over real HTTP (uvicorn on loopback, in the test's loop) with
the official MCP SDK client, in front of the real fixture MCP server over Streamable HTTP.
SPEC sections 2 (R-2.4), 5 (R-5.1), 6, 7, 8, 9, 10.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pydantic
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import Process, cli, free_port
from tests.e2e.mcpclient import connect, error_code, payload
from tests.e2e.org import ALL_SCOPES, PREFIX, READ_TOOL, Org, add_call, error_of, names_of, organization, rpc
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.governance import reach, restrictions
from toolcrib.gateway.identity import members
from toolcrib.policy.restrictions import Decision
from toolcrib.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


# --- tool:execute gates the whole endpoint -----------------------------------------------


async def test_r7_2_guest_sees_an_empty_tools_list_and_every_call_needs_tool_execute(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        guest = await org.token("gus", "guest", ALL_SCOPES)
        assert await org.listed(guest) == []
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search_tools", {"query": "add two numbers"}),
            ("execute_tool", {"tool": "desk__add_numbers", "arguments": {"a": 1, "b": 2}}),
            (PREFIX + "connections__list", {}),
            (PREFIX + "tools__diagnose", {"name": "desk__add_numbers"}),
            ("no_such_tool", {}),
            ("execute_tool", {"action_id": "act_" + "a" * 26}),
        ]
        for name, arguments in calls:
            error = error_of(await org.call(guest, name, arguments))
            assert (error["code"], error["permission"]) == ("permission_required", "tool:execute"), name
        # An auditor holds audit:read but not tool:execute: nothing over MCP, its operation over REST.
        auditor = await org.token("ada", "auditor", ALL_SCOPES)
        assert await org.listed(auditor) == []
        error = error_of(await org.call(auditor, PREFIX + "audit__search", {}))
        assert (error["code"], error["permission"]) == ("permission_required", "tool:execute")
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {auditor}"}) as http:
            assert (await http.post(org.base + "/api/audit/search", json={})).status_code == 200


# --- scopes by classification ------------------------------------------------------------


async def test_r7_3_read_grant_finds_read_tools_only_and_needs_write_or_destructive_scope_by_name(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        reader = await org.token("mia", "member", "mcp:tools,mcp:read")
        assert names_of(await org.search(reader, "get the request headers"))[0] == READ_TOOL
        assert payload(await org.execute(reader, READ_TOOL))["transport"] == "http"
        # add_numbers carries readOnlyHint, but "add" is a write verb: the most dangerous wins.
        for query, tool in [
            ("add two numbers", "desk__add_numbers"),
            ("echo a message back", "desk__echo_message"),
            ("create a support ticket", "desk__create_ticket"),
        ]:
            found = await org.search(reader, query)
            assert tool not in names_of(found)
            assert tool not in found["restricted"]
            assert tool in names_of(await org.search(org.owner, query))  # it is there for a writer
            error = error_of(await org.execute(reader, tool, {"a": 1, "b": 2, "message": "m", "title": "t"}))
            assert (error["code"], error["scope"]) == ("scope_required", "mcp:write")
        writer = await org.token("mia", scopes="mcp:tools mcp:read mcp:write")
        error = error_of(await org.execute(writer, "desk__delete_ticket", {"ticket_id": "T-1"}))
        assert (error["code"], error["scope"]) == ("scope_required", "mcp:destructive")
        destroyer = await org.token("mia", scopes="mcp:tools mcp:destructive")
        deleted = payload(await org.execute(destroyer, "desk__delete_ticket", {"ticket_id": "T-1"}))
        assert deleted["received"] == {"ticket_id": "T-1"}
        no_tools = await org.token("mia", scopes="mcp:read mcp:write mcp:destructive")
        for name, arguments in [("search_tools", {"query": "add numbers"}), tuple(add_call().values())]:
            error = error_of(await org.call(no_tools, name, arguments))
            assert (error["code"], error["scope"]) == ("scope_required", "mcp:tools")


# --- restrictions --------------------------------------------------------------------------


async def test_r8_3_role_glob_block_and_user_block_withhold_tools_by_name_only(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        bo = await org.token("bo")
        await org.block(target_kind="role", target="member", account="desk", tool="delete_*")
        await org.block(target_kind="user", target="mia", account="desk", tool="create_ticket")
        for token, query, tool in [
            (mia, "delete a support ticket", "desk__delete_ticket"),
            (mia, "create a support ticket", "desk__create_ticket"),
            (bo, "delete a support ticket", "desk__delete_ticket"),
        ]:
            found = await org.search(token, query)
            assert tool in found["restricted"]
            assert tool not in names_of(found)
            assert all(isinstance(name, str) for name in found["restricted"])  # a name: no schema, no handle
            assert "support ticket." not in json.dumps(found["restricted"])
            assert (
                error_code(await org.execute(token, tool, {"title": "t", "ticket_id": "T-1"})) == "restricted"
            )
        # The user block is mia's alone; the owner's role has no rules at all.
        created = payload(await org.execute(bo, "desk__create_ticket", {"title": "printer"}))
        assert created["received"] == {"title": "printer"}
        gone = payload(await org.execute(org.owner, "desk__delete_ticket", {"ticket_id": "T-9"}))
        assert gone["received"] == {"ticket_id": "T-9"}


async def test_r8_2_role_allowlist_naming_one_tool_withholds_every_other_tool_and_account(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await add_connection(org.gw, "desk-two", connector="Helpdesk", url=org.upstream, actor=OPERATOR)
        mia = await org.token("mia")
        await org.allow(target_kind="role", target="member", account="desk", tool="add_numbers")
        assert payload(await org.execute(mia, "desk__add_numbers", {"a": 1, "b": 1})) == {"sum": 2.0}
        for tool in ("desk__echo_message", "desk-two__add_numbers"):
            assert error_code(await org.execute(mia, tool, {"a": 1, "b": 1, "message": "m"})) == "restricted"
        found = await org.search(mia, "add two numbers")
        assert names_of(found) == ["desk__add_numbers"]
        assert "desk-two__add_numbers" in found["restricted"]
        listed = await org.control(mia, "connections__list")
        assert [c["name"] for c in listed] == ["desk"]
        everything = await org.control(org.owner, "connections__list")  # the owner's role has no allowlist
        assert sorted(c["name"] for c in everything) == ["desk", "desk-two"]


async def test_r8_2_allow_rule_naming_nothing_denies_everything(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        assert payload(await org.execute(mia, "desk__add_numbers", {"a": 1, "b": 1})) == {"sum": 2.0}
        await org.allow(target_kind="role", target="member")
        assert error_code(await org.execute(mia, "desk__add_numbers", {"a": 1, "b": 1})) == "restricted"
        found = await org.search(mia, "add two numbers")
        assert found["results"] == []
        assert "desk__add_numbers" in found["restricted"]
        assert await org.control(mia, "connections__list") == []


async def test_r8_2_user_layer_only_narrows_what_the_role_layer_allows(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        bo = await org.token("bo")
        await org.allow(target_kind="role", target="member", account="desk", tool="add_numbers")
        await org.allow(target_kind="role", target="member", account="desk", tool="create_ticket")
        # mia's own allowlist names a tool the role withholds, and one the role allows.
        await org.allow(target_kind="user", target="mia", account="desk", tool="echo_message")
        await org.allow(target_kind="user", target="mia", account="desk", tool="add_numbers")
        assert error_code(await org.execute(mia, "desk__echo_message", {"message": "m"})) == "restricted"
        assert payload(await org.execute(mia, "desk__add_numbers", {"a": 1, "b": 1})) == {"sum": 2.0}
        assert error_code(await org.execute(mia, "desk__create_ticket", {"title": "t"})) == "restricted"
        assert payload(await org.execute(bo, "desk__create_ticket", {"title": "t"}))["received"] == {
            "title": "t"
        }
        # A user block narrows further; nothing in the user layer loosens a role block.
        await org.block(target_kind="user", target="mia", account="desk", tool="add_*")
        assert error_code(await org.execute(mia, "desk__add_numbers", {"a": 1, "b": 1})) == "restricted"


# --- frozen parameters -------------------------------------------------------------------


async def test_r9_1_frozen_parameter_leaves_the_card_and_its_value_always_reaches_upstream(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        frozen = ["frozen", "set", "desk", "create_ticket", "priority", '"high"']
        await anyio.to_thread.run_sync(lambda: cli(org.db_url, *frozen))
        card = next(c for c in (await org.search(mia, "create a support ticket"))["results"])
        assert card["name"] == "desk__create_ticket"
        assert "priority" not in [i["name"] for i in card["inputs"]]
        assert "title" in json.dumps(card["inputs"])
        for sent in ({"title": "printer"}, {"title": "printer", "priority": "low"}):
            result = payload(await org.execute(mia, "desk__create_ticket", sent))
            assert result["received"] == {"title": "printer", "priority": "high"}
        by_handle = payload(
            await org.call(
                mia,
                "execute_tool",
                {"action_id": card["action_id"], "arguments": {"title": "t", "priority": "low"}},
            )
        )
        assert by_handle["received"]["priority"] == "high"


async def test_r9_1_frozen_required_field_counts_as_supplied(tmp_path: Path, fixture_http: Process) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        assert error_code(await org.execute(mia, "desk__echo_message", {})) == "needs_input"
        await restrictions.set_frozen(org.gw, OPERATOR, "desk", "echo_message", "message", "from the admin")
        result = payload(await org.execute(mia, "desk__echo_message", {}))
        assert result["received"] == {"message": "from the admin"}
        card = next(c for c in (await org.search(mia, "echo a message back"))["results"])
        assert "message" not in [i["name"] for i in card["inputs"]]


# --- revocation, suspension and removal on the next call; restrictions within the TTL -----


async def test_r7_6_revoked_token_suspended_and_removed_member_fail_on_the_very_next_call(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        revoked = await org.token("rex")
        suspended = await org.token("sue")
        removed = await org.token("rem")
        grant_id = next(g.id for g in await members.list_tokens(org.gw.store, "rex", actor=OPERATOR))
        cuts: list[tuple[str, Callable[[], Any]]] = [
            (revoked, lambda: members.revoke_token(org.gw.store, grant_id, actor=OPERATOR)),
            (suspended, lambda: members.suspend_member(org.gw.store, "sue", actor=OPERATOR)),
            (removed, lambda: members.remove_member(org.gw.store, "rem", actor=OPERATOR)),
        ]
        for token, cut in cuts:
            before = await rpc(org.base, token, "tools/call", add_call())
            assert before.status_code == 200
            assert not before.json()["result"]["isError"]
            await cut()
            after = await rpc(org.base, token, "tools/call", add_call())
            assert after.status_code == 401
            assert 'error="invalid_token"' in after.headers["www-authenticate"]
            assert (await rpc(org.base, token, "tools/list", {})).status_code == 401


async def test_r7_6_revocation_reaches_an_open_client_session_on_its_next_call(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        token = await org.token("rex")
        statuses: list[int] = []

        async def record(response: httpx2.Response) -> None:
            statuses.append(response.status_code)

        hooks = {"response": [record]}
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60, event_hooks=hooks)
        async with http, Client(streamable_http_client(org.base + "/mcp", http_client=http)) as client:
            assert not (await client.call_tool(**add_call())).is_error
            grant_id = next(g.id for g in await members.list_tokens(org.gw.store, "rex", actor=OPERATOR))
            await members.revoke_token(org.gw.store, grant_id, actor=OPERATOR)
            statuses.clear()
            with pytest.raises(MCPError):
                await client.call_tool(**add_call())
        assert statuses == [401]


@dataclass
class FakeClock:
    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now


async def test_r7_6_new_restriction_holds_once_the_policy_cache_time_has_passed(
    tmp_path: Path, fixture_http: Process
) -> None:
    clock = FakeClock()
    async with organization(tmp_path, fixture_http, clock, policy_cache_seconds=60) as org:
        mia = await org.token("mia")
        echo = ("desk__echo_message", {"message": "m"})
        assert not (await org.execute(mia, *echo)).is_error
        rule = await org.block(target_kind="role", target="member", account="desk", tool="echo_*")
        clock.now += 30
        early = await org.execute(mia, *echo)  # within the cache time the old decision may stand
        assert not early.is_error or error_code(early) == "restricted"
        clock.now += 31
        assert error_code(await org.execute(mia, *echo)) == "restricted"
        assert "desk__echo_message" in (await org.search(mia, "echo a message back"))["restricted"]
        await restrictions.remove_restriction(org.gw.store, rule, actor=OPERATOR)
        clock.now += 61
        assert not (await org.execute(mia, *echo)).is_error


def test_r7_6_policy_cache_time_over_120_seconds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(policy_cache_seconds=120).policy_cache_seconds == 120
    with pytest.raises(pydantic.ValidationError):
        Settings(policy_cache_seconds=121)
    monkeypatch.setenv("TOOLCRIB_POLICY_CACHE_SECONDS", "600")
    with pytest.raises(pydantic.ValidationError):
        Settings()


# --- forbidden ---------------------------------------------------------------------------


async def test_r7_4_forbidden_tool_is_hidden_everywhere_and_answers_forbidden_by_name(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        mia = await org.token("mia")
        await org.block(target_kind="role", target="member", account="desk", tool="delete_*")
        query = "delete a support ticket"
        assert "desk__delete_ticket" in names_of(await org.search(org.owner, query))
        assert "desk__delete_ticket" in (await org.search(mia, query))["restricted"]
        await anyio.to_thread.run_sync(
            lambda: cli(org.db_url, "tools", "classify", "desk", "delete_ticket", "forbidden")
        )
        for token in (org.owner, mia):
            found = await org.search(token, query)
            assert "desk__delete_ticket" not in names_of(found) + found["restricted"]
            assert (
                error_code(await org.execute(token, "desk__delete_ticket", {"ticket_id": "1"})) == "forbidden"
            )
        diagnosis = await org.control(org.owner, "tools__diagnose", {"name": "desk__delete_ticket"})
        assert diagnosis["stopped_at"] == "tool_in_catalog"


# --- the one resolver at every gate ------------------------------------------------------

GATES = ("list_connections", "connect", "search", "execute", "outbound", "result", "diagnose", "offerings")


async def test_r8_4_the_one_resolver_is_asked_on_every_path(
    tmp_path: Path, fixture_http: Process, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real = reach.decide

    def spy(*args: Any, **kwargs: Any) -> Decision:
        asked.append(kwargs["where"])
        return real(*args, **kwargs)

    monkeypatch.setattr(reach, "decide", spy)

    async def asks(work: Any) -> set[str]:
        asked.clear()
        result = await work
        assert not result.is_error, result
        return set(asked)

    async with organization(tmp_path, fixture_http) as org:
        assert "list_connections" in await asks(org.call(org.owner, PREFIX + "connections__list"))
        create = {"name": "desk-two", "connector": "Helpdesk", "url": org.upstream}
        assert "connect" in await asks(org.call(org.owner, PREFIX + "connections__create", create))
        assert "search" in await asks(org.call(org.owner, "search_tools", {"query": "add two numbers"}))
        asked.clear()
        cut = await org.execute(org.owner, "desk__big_result", {"kind": "array"})
        assert {"execute", "outbound"} <= set(asked)
        assert asked.index("execute") < asked.index("outbound")
        result_id = payload(cut)["toolcrib_result_id"]
        read = {"result_id": result_id, "offset": 0, "length": 100}
        assert "result" in await asks(org.call(org.owner, PREFIX + "results__read", read))
        assert "diagnose" in await asks(
            org.call(org.owner, PREFIX + "tools__diagnose", {"name": "desk__add_numbers"})
        )
        asked.clear()
        async with connect(org.base, org.owner) as client:
            await client.list_prompts()
        assert "offerings" in asked  # prompts and resources too


@pytest.mark.parametrize("gate", GATES)
async def test_r8_4_a_refusal_of_the_resolver_stops_each_path(
    tmp_path: Path, fixture_http: Process, monkeypatch: pytest.MonkeyPatch, gate: str
) -> None:
    real = reach.decide
    async with organization(tmp_path, fixture_http) as org:
        cut = await org.execute(org.owner, "desk__big_result", {"kind": "array"})
        result_id = payload(cut)["toolcrib_result_id"]
        audited = org.gw.audit_rows_written

        def refuse_at_gate(*args: Any, **kwargs: Any) -> Decision:
            if kwargs["where"] == gate:
                return Decision(False, ("refused by the test",), ())
            return real(*args, **kwargs)

        monkeypatch.setattr(reach, "decide", refuse_at_gate)
        if gate == "list_connections":
            assert await org.control(org.owner, "connections__list") == []
        elif gate == "connect":
            create = {"name": "desk-two", "connector": "Helpdesk", "url": org.upstream}
            assert (
                error_code(await org.call(org.owner, PREFIX + "connections__create", create)) == "restricted"
            )
            assert "desk-two" not in org.gw.catalog.connections
        elif gate == "search":
            found = await org.search(org.owner, "add two numbers")
            assert found["results"] == []
            assert "desk__add_numbers" in found["restricted"]
        elif gate in ("execute", "outbound"):
            assert (
                error_code(await org.execute(org.owner, "desk__add_numbers", {"a": 1, "b": 1}))
                == "restricted"
            )
            assert org.gw.audit_rows_written == audited  # refused before the upstream call
        elif gate == "result":
            read = {"result_id": result_id}
            assert error_code(await org.call(org.owner, PREFIX + "results__read", read)) == "restricted"
        elif gate == "offerings":
            async with connect(org.base, org.owner) as client:
                assert (await client.list_prompts()).prompts == []
                with pytest.raises(MCPError) as refused:
                    await client.read_resource("toolcrib://desk/docs://handbook")
            assert refused.value.data["code"] == "not_found"
            assert org.gw.audit_rows_written == audited
        else:
            diagnosis = await org.control(org.owner, "tools__diagnose", {"name": "desk__add_numbers"})
            assert diagnosis["stopped_at"] == "connection_exists"


# --- the control plane ------------------------------------------


async def _listing_bytes(org: Org, token: str) -> int:
    response = await rpc(org.base, token, "tools/list", {})
    assert response.status_code == 200
    tools = response.json()["result"]["tools"]
    assert any(t["name"].startswith(PREFIX) for t in tools)
    return len(json.dumps(tools, separators=(",", ":")).encode())


# R-10.2's own bound is the single tool's 3,000 bytes. The individual listing's is this project's
# guard against bloat: 7,000 held 25 operations; #21 added seven that its rules ask for on MCP (tools
# changes/accept/reject, limits set/list/remove, frozen list), each with its inputSchema: 9,000. #35
# added the four the connector catalog asks for on MCP (connectors search/show/updates/upgrade), 1,022
# bytes with their schemas: 10,100. The single tool stays within R-10.2's 3,000 (its description
# names each resource once, as its enum names every operation).
@pytest.mark.parametrize(("admin_surface", "bound"), [("single", 3_000), ("individual", 10_100)])
async def test_r10_2_owner_listing_stays_within_its_bound_whatever_is_connected(
    tmp_path: Path, fixture_http: Process, admin_surface: str, bound: int
) -> None:
    """R-10.2's 3,000 bytes with the operations behind one ``toolcrib__admin`` tool; listed one by
    one (R-10.1) they stay compact, under 10,100 (each keeps its inputSchema and annotations)."""
    async with organization(tmp_path, fixture_http, admin_surface=admin_surface) as org:
        with_one = await _listing_bytes(org, org.owner)
        for name in ("desk-two", "desk-three"):
            assert (
                await add_connection(org.gw, name, connector="Helpdesk", url=org.upstream, actor=OPERATOR)
            ).status == "active"
        with_three = await _listing_bytes(org, org.owner)
    assert with_one == with_three <= bound


async def test_r10_1_tools_list_names_only_the_operations_the_caller_may_use(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        member = await org.token("mia", "member", ALL_SCOPES)
        listed = await org.listed(member)
        assert listed[:2] == ["search_tools", "execute_tool"]
        assert {n.removeprefix(PREFIX) for n in listed[2:]} == {
            "connections__list",
            "connections__get",
            "results__read",
            "tools__diagnose",
            "grants__list",  # their own grants: every member lists and revokes them
            "grants__revoke",
        }
        owner_ops = {n for n in await org.listed(org.owner) if n.startswith(PREFIX)}
        assert PREFIX + "members__invite" in owner_ops
        assert PREFIX + "members__remove" in owner_ops
        admin_read = await org.token("ada", "admin", "mcp:tools mcp:read")
        read_ops = {n.removeprefix(PREFIX) for n in await org.listed(admin_read) if n.startswith(PREFIX)}
        assert {"members__list", "restrictions__explain", "audit__search"} <= read_ops
        writes = {
            "members__invite",
            "connections__create",
            "frozen__set",
            "members__remove",
            "grants__revoke",
        }
        assert not read_ops & writes
        admin_write = await org.token("ada", scopes="mcp:read mcp:write")
        write_ops = {n.removeprefix(PREFIX) for n in await org.listed(admin_write) if n.startswith(PREFIX)}
        assert {"members__invite", "connections__create"} <= write_ops
        assert not write_ops & {"members__remove", "grants__revoke", "connections__delete"}
        # Each operation's permission and scope are enforced when it is called anyway.
        error = error_of(await org.call(member, PREFIX + "members__list"))
        assert (error["code"], error["permission"]) == ("permission_required", "members:read")
        error = error_of(
            await org.call(admin_read, PREFIX + "members__invite", {"name": "x", "role": "member"})
        )
        assert (error["code"], error["scope"]) == ("scope_required", "mcp:write")
        assert "x" not in [m["name"] for m in await org.control(org.owner, "members__list")]


async def test_r10_2_rest_api_serves_the_same_operations_with_the_same_checks(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        member = await org.token("mia")
        async with httpx2.AsyncClient(base_url=org.base, timeout=30) as http:
            owner_answer = await http.post(
                "/api/members/list", json={}, headers={"Authorization": f"Bearer {org.owner}"}
            )
            assert owner_answer.status_code == 200
            assert {m["name"] for m in owner_answer.json()["result"]} == {"owner", "mia"}
            refused = await http.post(
                "/api/members/list", json={}, headers={"Authorization": f"Bearer {member}"}
            )
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "permission_required"
            assert (await http.post("/api/members/list", json={})).status_code == 401
            reader = await org.token("rory", "admin", "mcp:read")
            short = await http.post(
                "/api/members/invite",
                json={"name": "zed", "role": "member"},
                headers={"Authorization": f"Bearer {reader}"},
            )
            assert short.status_code == 403
            assert short.json()["error"]["scope"] == "mcp:write"
            challenge = short.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge
            assert 'scope="mcp:write"' in challenge
            document = (await http.get("/api/openapi.json")).json()
        operation_ids = {p["post"]["operationId"] for p in document["paths"].values()}
        listed = {n for n in await org.listed(org.owner) if n.startswith(PREFIX)}
        # prompts and resources: REST and command-line operations; MCP has its own methods (#34)
        own_methods = {PREFIX + n for n in ("prompts__list", "resources__list", "resources__list_templates")}
        assert operation_ids == listed | own_methods | {PREFIX + "resources__read"}
        assert "/api/members/list" in document["paths"]


async def test_r8_6_explain_says_in_words_which_rule_decided(tmp_path: Path, fixture_http: Process) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await org.token("mia")
        rule = await org.block(target_kind="role", target="member", account="desk", tool="delete_*")
        lines = await org.control(
            org.owner, "restrictions__explain", {"user": "mia", "tool": "desk__delete_ticket"}
        )
        assert "withheld" in lines[0]
        assert any(rule in line and "delete_*" in line for line in lines[1:])
        allowed = await org.control(
            org.owner, "restrictions__explain", {"user": "mia", "tool": "desk__add_numbers"}
        )
        assert "allowed" in allowed[0]
        assert not any(rule in line for line in allowed)


async def test_r10_3_diagnose_walks_the_checks_in_order_and_says_where_it_stopped(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        dead = f"http://127.0.0.1:{free_port()}/mcp"
        assert (
            await add_connection(org.gw, "dead", connector="Helpdesk", url=dead, actor=OPERATOR)
        ).status == "error"
        mia = await org.token("mia")
        await org.block(target_kind="user", target="mia", account="desk", tool="delete_ticket")
        no_tools = await org.token("mia", scopes="mcp:read")

        async def stopped(token: str, name: str) -> str:
            answer = await org.control(token, "tools__diagnose", {"name": name})
            assert answer["reminder"]
            return str(answer["stopped_at"])

        assert await stopped(mia, "nowhere__anything") == "connection_exists"
        assert await stopped(mia, "dead__add_numbers") == "connection_active"
        assert await stopped(mia, "desk__no_such_tool") == "tool_in_catalog"
        assert await stopped(mia, "desk__delete_ticket") == "tool_in_catalog"
        assert await stopped(no_tools, "desk__add_numbers") == "grant_scope"
        reader = await org.token("mia", scopes="mcp:tools mcp:read")
        assert await stopped(reader, "desk__echo_message") == "grant_scope"  # a write tool: mcp:write
        assert await stopped(reader, READ_TOOL) == "none"
        assert await stopped(mia, "desk__add_numbers") == "none"
