"""Upstream OAuth 2.1 against a real authorization server on loopback (#14, R-13.1, R-13.3).

The authorization server and the MCP server it protects are the SDK's own server-side auth
(``tests/fixtures/oauth_upstream.py``); the gateway is real, served over HTTP, and the person is an
HTTP client with a cookie jar that opens the gateway's start link, confirms it, and follows the
authorize redirect (the fixture approves at once) to the gateway's ``/oauth/callback`` (R-13.6).
In the tests about expiry, access tokens live two seconds, so a session outlives one; elsewhere
they live an hour, so no renewal happens by chance on a slow machine.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from sqlalchemy import select

from tests.conftest import ROOT, TOOLCRIB, cli, env_for, free_port, start_gateway
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, error_code, gateway_payload
from tests.e2e.oauth_browser import follow, to_callback
from tests.e2e.org import ALL_SCOPES
from tests.fixtures.oauth_upstream import OAuthUpstream, serve_oauth_upstream
from tests.principals import OPERATOR
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.store.tables import upstream_tokens

pytestmark = pytest.mark.anyio

ACCESS_SECONDS = 2


@dataclass
class World:
    gw: Gateway
    base: str
    token: str
    upstream: OAuthUpstream


@asynccontextmanager
async def world(tmp_path: Path, access_seconds: int = 3600, **values: Any) -> AsyncIterator[World]:
    port = free_port()
    settings = settings_for(tmp_path, semantic=False, port=port, **values)
    async with (
        serve_oauth_upstream(access_seconds=access_seconds) as upstream,
        open_gateway(settings) as gw,
        serve(gw, port) as base,
    ):
        yield World(gw, base, await owner_token(gw), upstream)


async def authorized(w: World, name: str) -> dict[str, Any]:
    row = await connections.add_connection(
        w.gw, name, connector="Helpdesk", url=w.upstream.mcp_url, oauth=True, actor=OPERATOR
    )
    view = connections.connection_view(row)
    assert view["status"] == "pending", view
    assert view["authorize_url"], view
    back = await follow(view["authorize_url"])
    assert back.status_code == 200, back.text
    return connections.connection_view(await connections.get_connection(w.gw, name, principal=OPERATOR))


async def wait_until_expired(upstream: OAuthUpstream) -> None:
    """Until the authorization server itself refuses every access token it issued (bounded)."""
    with anyio.fail_after(ACCESS_SECONDS + 5):
        while upstream.live_access_tokens():  # noqa: ASYNC110 - the server's clock, no event to wait on
            await anyio.sleep(0.05)


async def test_r13_1_oauth_connection_authorized_headlessly_through_the_callback(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        view = await authorized(w, "helpdesk")
        assert view["status"] == "active", view["reason"]
        assert view["tools"] > 0
        assert view["authorize_url"] is None
        assert w.upstream.registrations == 1  # dynamic client registration, once
        assert w.upstream.grants == ["authorization_code"]
        async with connect(w.base, w.token) as client:
            result = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 2, "b": 3}}
            )
            assert not result.is_error, result


async def test_r13_3_upstream_tokens_are_sealed_at_rest(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await authorized(w, "helpdesk")
        async with w.gw.store.db.read() as conn:
            row = (await conn.execute(select(upstream_tokens))).one()
        issued = list(w.upstream.access) + list(w.upstream.refresh)
        assert issued
        stored = f"{row.tokens} {row.client}"
        assert not any(token in stored for token in issued)
        assert "client_id" not in stored


async def test_r13_1_callback_state_is_single_use(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        row = await connections.add_connection(
            w.gw, "helpdesk", connector="Helpdesk", url=w.upstream.mcp_url, oauth=True, actor=OPERATOR
        )
        assert row.authorize_url is not None
        async with httpx2.AsyncClient(timeout=30) as http:
            back = await to_callback(http, row.authorize_url)
            assert (await http.get(back)).status_code == 200
            assert (await http.get(back)).status_code == 404  # the same state again: refused
            forged = back.split("state=")[0] + "state=not-a-pending-state"
            assert (await http.get(forged)).status_code == 404


async def test_access_token_expiring_mid_session_is_refreshed_without_a_failed_call(tmp_path: Path) -> None:
    async with world(tmp_path, access_seconds=ACCESS_SECONDS) as w:
        await authorized(w, "helpdesk")
        async with connect(w.base, w.token) as client:
            first = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 1}}
            )
            assert not first.is_error, first
            await wait_until_expired(w.upstream)
            second = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 2, "b": 2}}
            )
            assert not second.is_error, second
        assert "refresh_token" in w.upstream.grants
        assert (await connections.get_connection(w.gw, "helpdesk", principal=OPERATOR)).status == "active"


async def test_r13_1_revoked_refresh_token_turns_connection_to_needs_reauth_and_search_names_it(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, access_seconds=ACCESS_SECONDS) as w:
        await authorized(w, "helpdesk")
        w.upstream.revoke_refresh_tokens()
        await wait_until_expired(w.upstream)
        async with connect(w.base, w.token) as client:
            result = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 2}}
            )
            assert error_code(result) == "needs_reauth"
            assert gateway_payload(result)["error"]["authorize_url"] is None  # nobody started a flow
            owner = await operator_principal(w.gw.store)
            row = await connections.get_connection(w.gw, "helpdesk", owner)
            assert row.status == "needs_reauth"
            assert row.authorize_url is None
            assert "refresh" in (row.reason or "")
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            assert found["results"] == []
            assert found["needs_reauth"] == [
                {
                    "account": "helpdesk",
                    "connector": "Helpdesk",
                    "status": "needs_reauth",
                    "authorize_url": None,
                }
            ]
            # an admin refreshes it and is given a link of their own: authorized again, tools back
            url = (await connections.refresh_connection(w.gw, "helpdesk", owner)).authorize_url
            assert url is not None
            assert url.startswith(w.base + "/admin/oauth/start/")
            assert (await follow(url)).status_code == 200
            assert (await connections.get_connection(w.gw, "helpdesk", principal=OPERATOR)).status == "active"
            again = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 2}}
            )
            assert not again.is_error, again
        assert w.upstream.refused_refreshes >= 1


async def test_r10_rest_create_with_oauth_answers_the_authorize_url(tmp_path: Path) -> None:
    async with world(tmp_path) as w, httpx2.AsyncClient(timeout=30) as http:
        headers = {"Authorization": f"Bearer {w.token}"}
        body = {"name": "helpdesk", "connector": "Helpdesk", "url": w.upstream.mcp_url, "oauth": True}
        answer = await http.post(w.base + "/api/connections/create", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        view = answer.json()["result"]
        assert view["status"] == "pending"
        assert view["auth"] == "oauth"
        assert (await follow(view["authorize_url"])).status_code == 200
        got = await http.post(w.base + "/api/connections/get", json={"name": "helpdesk"}, headers=headers)
        assert got.json()["result"]["status"] == "active"


async def test_r13_1_cli_add_oauth_prints_the_url_and_finishes_through_the_serving_gateway(
    tmp_path: Path,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'cli.db'}"
    cli(db_url, "init")  # the command line acts as the owner: its start link is the owner's
    gateway = start_gateway(db_url, {"TOOLCRIB_SEMANTIC": "false"})
    try:
        async with serve_oauth_upstream() as upstream:
            env = env_for({"TOOLCRIB_PUBLIC_URL": gateway.url, "TOOLCRIB_SEMANTIC": "false"})
            argv = [*TOOLCRIB, "connections", "add", "helpdesk", "--connector", "Helpdesk"]
            argv += ["--url", upstream.mcp_url, "--oauth", "--json", "--database", db_url]
            proc = subprocess.Popen(  # noqa: ASYNC220 - its pipes are read from worker threads below
                argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            try:
                assert proc.stderr is not None
                with anyio.fail_after(60):
                    line = await anyio.to_thread.run_sync(proc.stderr.readline)
                assert line.startswith(b"Authorize helpdesk at its provider: "), line
                url = line.decode().split(": ", 1)[1].strip()
                back = await follow(url)
                assert back.status_code == 202  # the serving gateway took the code; the CLI finishes
                with anyio.fail_after(60):
                    out, _ = await anyio.to_thread.run_sync(proc.communicate)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        assert proc.returncode == 0
        view = json.loads(out)
        assert view["status"] == "active"
        assert view["tools"] > 0
    finally:
        gateway.stop()


async def test_r13_1_per_member_connection_calls_on_each_members_own_grant(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        row = await connections.add_connection(
            w.gw,
            "desk",
            connector="Helpdesk",
            url=w.upstream.mcp_url,
            oauth={"per_member": True},
            actor=OPERATOR,
        )
        assert row.auth == "oauth_member"
        assert row.authorize_url is not None
        assert (await follow(row.authorize_url)).status_code == 200  # whoever added it: the catalog
        assert (await connections.get_connection(w.gw, "desk", principal=OPERATOR)).status == "active"
        first_grant = set(w.upstream.access)
        await members.add_member(w.gw.store, "mia", "member", actor=OPERATOR)
        _, mia = await members.create_token(w.gw.store, "mia", ALL_SCOPES, actor=OPERATOR)
        add = {"tool": "desk__add_numbers", "arguments": {"a": 1, "b": 2}}
        async with connect(w.base, mia) as client:
            refused = await client.call_tool("execute_tool", add)
            assert error_code(refused) == "needs_reauth"
            url = gateway_payload(refused)["error"]["authorize_url"]
            assert url
            assert url != row.authorize_url
            for _ in range(4):  # asking again is not a crash: no back-off turns it into upstream_error
                again = await client.call_tool("execute_tool", add)
                assert error_code(again) == "needs_reauth"
                assert gateway_payload(again)["error"]["authorize_url"] == url
            assert (
                await connections.get_connection(w.gw, "desk", principal=OPERATOR)
            ).status == "active"  # others unaffected
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            assert found["needs_reauth"] == [
                {"account": "desk", "connector": "Helpdesk", "status": "needs_reauth", "authorize_url": url}
            ]
            assert (await follow(url)).status_code == 200  # mia authorizes her own account
            w.upstream.verified.clear()
            done = await client.call_tool("execute_tool", add)
            assert not done.is_error, done
            presented = set(w.upstream.verified)
            assert presented
            assert not presented & first_grant  # her own token, not the grant of who added it
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            assert "needs_reauth" not in found
        assert w.upstream.registrations == 1  # one client registration for the connection


async def test_r12_2_upstream_access_token_is_redacted_from_results(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await authorized(w, "helpdesk")
        async with connect(w.base, w.token) as client:
            result = await client.call_tool(
                "execute_tool", {"tool": "helpdesk__reveal_grant", "arguments": {}}
            )
        assert not result.is_error, result
        issued = list(w.upstream.access)
        assert issued
        shown = json.dumps(result.model_dump(mode="json"))
        assert not any(token in shown for token in issued)
        assert result.structured_content == {"you_are": "[REDACTED]"}


async def test_r13_1_an_unused_authorize_link_expires_and_the_connection_says_so(tmp_path: Path) -> None:
    async with world(tmp_path, upstream_oauth_pending_seconds=1.0) as w:
        row = await connections.add_connection(
            w.gw, "helpdesk", connector="Helpdesk", url=w.upstream.mcp_url, oauth=True, actor=OPERATOR
        )
        assert row.authorize_url is not None
        owner = await operator_principal(w.gw.store)
        with anyio.fail_after(15):
            while (await connections.get_connection(w.gw, "helpdesk", owner)).authorize_url is not None:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        async with httpx2.AsyncClient(timeout=30) as http:
            late = await http.get(row.authorize_url)
        assert late.status_code == 404  # the flow is gone: the link cannot be used any more
        stale = await connections.get_connection(w.gw, "helpdesk", owner)
        assert stale.status == "pending"
        assert stale.tool_count == 0
        # The next link lives long enough to be followed on a busy machine (the first one's 1 s did
        # its work above): what is shown here is that a refresh makes a new, working link.
        w.gw.settings = w.gw.settings.model_copy(update={"upstream_oauth_pending_seconds": 600.0})
        fresh = await connections.refresh_connection(w.gw, "helpdesk", principal=OPERATOR)  # a new link
        assert fresh.authorize_url is not None
        assert fresh.authorize_url != row.authorize_url
        assert (await follow(fresh.authorize_url)).status_code == 200


async def test_r13_1_authorization_refused_at_the_provider_leaves_the_connection_unauthorized(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w, httpx2.AsyncClient(timeout=30) as http:
        row = await connections.add_connection(
            w.gw, "helpdesk", connector="Helpdesk", url=w.upstream.mcp_url, oauth=True, actor=OPERATOR
        )
        assert row.authorize_url is not None
        back = await to_callback(http, row.authorize_url)
        state = back.split("state=")[1].split("&")[0]
        refused = await http.get(f"{w.base}/oauth/callback?error=access_denied&state={state}")
        assert refused.status_code == 400
        after = await connections.get_connection(w.gw, "helpdesk", await operator_principal(w.gw.store))
        assert after.status == "pending"
        assert after.authorize_url is None
        assert (await http.get(back)).status_code == 404  # the state was used by the refusal
        assert not w.upstream.grants


async def test_a_second_gateway_sharing_the_grant_renews_with_the_rotated_refresh_token(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, access_seconds=ACCESS_SECONDS) as w:
        await authorized(w, "helpdesk")
        async with open_gateway(w.gw.settings) as other:  # a second replica on the same database
            owner, peer = await operator_principal(w.gw.store), await operator_principal(other.store)
            add = {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 1}}
            await execute_tool(w.gw, owner, **add)
            await execute_tool(other, peer, **add)  # both hold the grant in memory now
            await wait_until_expired(w.upstream)
            await execute_tool(w.gw, owner, **add)  # renews, and the provider rotates the refresh token
            await execute_tool(other, peer, **add)  # must renew with the rotated one, not its stale copy
            assert w.upstream.grants.count("refresh_token") >= 2  # each process renewed (more if slow)
            assert w.upstream.refused_refreshes == 0
            assert (
                await connections.get_connection(other, "helpdesk", principal=OPERATOR)
            ).status == "active"


async def test_access_token_refused_before_its_expiry_is_renewed_and_the_call_goes_through(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await authorized(w, "helpdesk")
        owner = await operator_principal(w.gw.store)
        add = {"tool": "helpdesk__add_numbers", "arguments": {"a": 1, "b": 1}}
        await execute_tool(w.gw, owner, **add)
        w.upstream.revoke_access_tokens()  # the provider drops them; the refresh token is still good
        answer = await execute_tool(w.gw, owner, **add)
        assert answer["structuredContent"] == {"sum": 2.0}
        assert w.upstream.grants == ["authorization_code", "refresh_token"]
        assert (await connections.get_connection(w.gw, "helpdesk", principal=OPERATOR)).status == "active"


async def test_relabelling_an_oauth_connection_keeps_its_grant(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await authorized(w, "helpdesk")
        row = await connections.update_connection(w.gw, "helpdesk", connector="Desk", actor=OPERATOR)
        assert (row.status, row.auth, row.connector) == ("active", "oauth", "Desk")
        assert w.upstream.grants == ["authorization_code"]  # no new authorization was needed
