"""R-13.6: an upstream OAuth authorization is completed only by the person who started it (#21).

The attack of issue #21 (finding 1): the link that authorizes the organization's shared OAuth
connection, with its live ``state``, sat in the connection's status reason, which every member
reads; following it in any browser bound the organization's connection to that person's account
at the provider. Here the gateway is real (served over HTTP), the provider is a real OAuth 2.1
authorization server (``tests/fixtures/oauth_upstream.py``, which approves at once), and every
person is an HTTP client with their own cookie jar; one test drives a real Chromium. The attack and
the single-use link run on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import select

from tests.admin.browser import browser_page
from tests.admin.console import hidden, sign_in
from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, error_code, gateway_payload
from tests.e2e.oauth_browser import confirm, follow, to_callback
from tests.e2e.org import ALL_SCOPES
from tests.fixtures.oauth_upstream import OAuthUpstream, serve_oauth_upstream
from tests.principals import OPERATOR
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.policy.gates import Principal
from toolcrib.store.tables import audit, oauth_pending, upstream_tokens

pytestmark = pytest.mark.anyio

START = "/admin/oauth/start/"


@dataclass
class World:
    gw: Gateway
    base: str
    upstream: OAuthUpstream
    owner: str  # tokens
    ada: str  # another admin
    mia: str  # a member


@asynccontextmanager
async def world(tmp_path: Path) -> AsyncIterator[World]:
    port = free_port()
    settings = settings_for(tmp_path, semantic=False, port=port)
    async with (
        serve_oauth_upstream() as upstream,
        open_gateway(settings) as gw,
        serve(gw, port) as base,
    ):
        tokens = []
        for name, role in (("ada", "admin"), ("mia", "member")):
            await members.add_member(gw.store, name, role, actor=OPERATOR)
            tokens.append((await members.create_token(gw.store, name, ALL_SCOPES, actor=OPERATOR))[1])
        yield World(gw, base, upstream, await owner_token(gw), *tokens)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _rest(w: World, token: str, operation: str, body: dict[str, Any]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(f"{w.base}/api/connections/{operation}", json=body, headers=_bearer(token))


async def _pending(gw: Gateway) -> Any:
    async with gw.store.db.read() as conn:
        return (await conn.execute(select(oauth_pending))).one()


async def _everything_read_by(w: World, token: str) -> str:
    """What ``token``'s member reads about connections on every face: REST list and get, MCP list
    and search (its reauth notices), and the console's Connections page."""
    seen = []
    for operation, body in (("list", {}), ("get", {"name": "notes"})):
        answer = await _rest(w, token, operation, body)
        assert answer.status_code == 200, answer.text
        seen.append(answer.text)
    async with connect(w.base, token) as client:
        listed = await client.call_tool("toolcrib__connections__list", {})
        assert not listed.is_error, listed
        seen.append(listed.model_dump_json())
        seen.append((await client.call_tool("search_tools", {"query": "add two numbers"})).model_dump_json())
    async with httpx2.AsyncClient(base_url=w.base, timeout=60) as http:
        await sign_in(http, token)
        page = await http.get("/admin/connections")
        assert page.status_code == 200, page.text
        assert "notes" in page.text
        seen.append(page.text)
    return "\n".join(seen)


@pytest.mark.usefixtures("on_each_store")  # the binding is held in the store: SQLite and PostgreSQL
async def test_r13_6_a_member_cannot_bind_the_organizations_connection_to_their_own_account(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        body = {"name": "notes", "connector": "Notes", "url": w.upstream.mcp_url, "oauth": True}
        created = await _rest(w, w.owner, "create", body)
        assert created.status_code == 200, created.text
        view = created.json()["result"]
        assert view["status"] == "pending"
        link = view["authorize_url"]  # the starter's own link, answered to the call that started it
        state = (await _pending(w.gw)).state
        for token in (w.mia, w.ada):  # a member, and an admin who did not start it
            seen = await _everything_read_by(w, token)
            assert state not in seen
            assert w.upstream.base + "/authorize" not in seen  # no provider URL
            assert START not in seen
            assert link not in seen
        assert view["reason"] is None or state not in view["reason"]

        # someone who got hold of the provider's URL authorizes with their own account there and
        # lands on the callback with the right state and a code, in a browser that never confirmed
        provider_url = w.gw.store.box.open((await _pending(w.gw)).authorize_url)
        async with httpx2.AsyncClient(timeout=30) as attacker:
            at_provider = await attacker.get(provider_url)
            assert at_provider.status_code == 302
            refused = await attacker.get(at_provider.headers["location"])
        assert refused.status_code == 403
        owner = await operator_principal(w.gw.store)
        assert (await connections.get_connection(w.gw, "notes", owner)).status == "pending"
        assert w.upstream.grants == []  # the attacker's code was never exchanged
        async with w.gw.store.db.read() as conn:
            assert (await conn.execute(select(upstream_tokens.c.tokens))).scalars().all() in ([], [None])
            rows = (await conn.execute(select(audit).where(audit.c.kind == "admin"))).all()
        assert [(r.member, r.account, r.operation, r.outcome, r.error_code) for r in rows] == [
            (owner.member, "notes", "oauth_callback", "error", "forbidden")
        ]

        # the starter's own browser: start link -> confirm -> provider -> callback
        assert (await follow(link)).status_code == 200
        done = await connections.get_connection(w.gw, "notes", owner)
        assert done.status == "active"
        assert done.tool_count > 0


@pytest.mark.usefixtures("on_each_store")  # the binding is held in the store: SQLite and PostgreSQL
async def test_r13_6_the_start_link_works_once_and_never_for_another_signed_in_member(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        owner = await operator_principal(w.gw.store)
        row = await connections.add_connection(
            w.gw, "notes", connector="Notes", url=w.upstream.mcp_url, oauth=True, actor=owner
        )
        link = row.authorize_url
        assert link is not None
        assert link.startswith(w.base + START)
        async with (
            httpx2.AsyncClient(base_url=w.base, timeout=30) as ada,
            httpx2.AsyncClient(timeout=30) as mine,
            httpx2.AsyncClient(timeout=30) as other,
        ):
            await sign_in(ada, w.ada)  # an admin signed in to the console: not who started it
            assert (await ada.get(link)).status_code == 403
            page = await other.get(link)  # a browser without a session may open it (a preview) ...
            assert page.status_code == 200
            nonce = hidden(page.text, "nonce")
            ada.cookies.set("toolcrib_oauth_start", nonce, domain="127.0.0.1", path=START.rstrip("/"))
            assert (await ada.post(link, data={"nonce": nonce})).status_code == 403  # the session refuses
            no_nonce = await mine.post(link, data={})  # ... but not confirm it without the form's nonce
            assert no_nonce.status_code == 403
            back = await to_callback(mine, link)  # the person it was given to confirms it
            again = await other.post(link, data={"nonce": nonce})
            assert again.status_code == 404  # single use: a second browser is refused
            assert (await other.get(link)).status_code == 404
            assert (await other.get(back)).status_code == 403  # the right state, the wrong browser
            assert (await mine.get(back)).status_code == 200
        assert (await connections.get_connection(w.gw, "notes", owner)).status == "active"


async def test_r13_6_each_admin_who_refreshes_gets_a_link_of_their_own_and_the_older_one_dies(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        owner = await operator_principal(w.gw.store)
        first = await connections.add_connection(
            w.gw, "notes", connector="Notes", url=w.upstream.mcp_url, oauth=True, actor=owner
        )
        ada = Principal(member="ada", role="admin", scopes=owner.scopes, grant_id="test")
        second = await connections.refresh_connection(w.gw, "notes", ada)
        assert second.authorize_url is not None
        assert first.authorize_url is not None
        assert second.authorize_url != first.authorize_url
        assert (await connections.get_connection(w.gw, "notes", owner)).authorize_url is None
        assert (await connections.get_connection(w.gw, "notes", ada)).authorize_url == second.authorize_url
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.get(first.authorize_url)).status_code == 404  # replaced
        assert (await follow(second.authorize_url)).status_code == 200
        assert (await connections.get_connection(w.gw, "notes", owner)).status == "active"


async def test_r13_6_a_members_own_grant_link_goes_to_that_member_alone(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        owner = await operator_principal(w.gw.store)
        row = await connections.add_connection(
            w.gw,
            "desk",
            connector="Helpdesk",
            url=w.upstream.mcp_url,
            oauth={"per_member": True},
            actor=owner,
        )
        assert row.authorize_url is not None
        assert (await follow(row.authorize_url)).status_code == 200
        add = {"tool": "desk__add_numbers", "arguments": {"a": 1, "b": 2}}
        async with connect(w.base, w.mia) as client:
            refused = await client.call_tool("execute_tool", add)
            assert error_code(refused) == "needs_reauth"
            mine = gateway_payload(refused)["error"]["authorize_url"]
            assert mine is not None
            assert mine.startswith(w.base + START)
        for token in (w.owner, w.ada):
            assert mine not in await _read_desk(w, token)
        assert (await connections.get_connection(w.gw, "desk", owner)).authorize_url is None
        async with connect(w.base, w.mia) as client:
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
            assert found["needs_reauth"][0]["authorize_url"] == mine
        assert (await follow(mine)).status_code == 200
        async with connect(w.base, w.mia) as client:
            assert not (await client.call_tool("execute_tool", add)).is_error


async def _read_desk(w: World, token: str) -> str:
    seen = [(await _rest(w, token, operation, {"name": "desk"})).text for operation in ("list", "get")]
    async with connect(w.base, token) as client:
        seen.append((await client.call_tool("search_tools", {"query": "add two numbers"})).model_dump_json())
    return "\n".join(seen)


async def test_r13_6_in_a_real_browser_the_starter_confirms_and_the_provider_sends_them_back(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        owner = await operator_principal(w.gw.store)
        row = await connections.add_connection(
            w.gw, "notes", connector="Notes", url=w.upstream.mcp_url, oauth=True, actor=owner
        )
        assert row.authorize_url is not None
        async with browser_page(w.base) as page:
            opened = await page.goto(row.authorize_url)
            assert opened is not None
            assert opened.status == 200
            host = w.upstream.base.removeprefix("http://")
            await page.get_by_role("button", name=f"Continue to {host}").click()
            await page.wait_for_url("**/oauth/callback**")
            assert "is authorized" in await page.content()
        assert (await connections.get_connection(w.gw, "notes", owner)).status == "active"


async def test_r13_6_the_callback_without_the_confirming_browser_is_refused_even_before_anyone_confirmed(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        owner = await operator_principal(w.gw.store)
        row = await connections.add_connection(
            w.gw, "notes", connector="Notes", url=w.upstream.mcp_url, oauth=True, actor=owner
        )
        assert row.authorize_url is not None
        state = (await _pending(w.gw)).state
        async with httpx2.AsyncClient(timeout=30) as http:
            forged = await http.get(
                f"{w.base}/oauth/callback",
                params={"state": state, "code": "x"},
                headers={"Cookie": "toolcrib_oauth=guess"},
            )
            assert forged.status_code == 403
            sent = await confirm(http, row.authorize_url)  # the starter's link still works after it
            assert sent.status_code == 303
            assert sent.headers["location"].startswith(w.upstream.base + "/authorize?")
            [cookie] = [c for c in sent.headers.get_list("set-cookie") if c.startswith("toolcrib_oauth=")]
            assert "HttpOnly" in cookie
            assert "Path=/oauth" in cookie
            assert "samesite=lax" in cookie.lower()
