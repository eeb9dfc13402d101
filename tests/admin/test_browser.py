"""The admin console in a real browser (#13): Chromium, driven by Playwright, against a real gateway.

One gateway per module, served by uvicorn on a loopback port; the connection is the fixture server
over stdio, added from the console's own form. The story: sign in, add a connection, block a tool
for a role, search as a member of that role and see the tool withheld, read the audit row of a
call; then approve a member's held destructive call from its approval link. Every page is also
opened and checked for Content-Security-Policy violations, which is what proves the console needs
no inline script or style. With ``TOOLCRIB_SCREENSHOTS`` set
(``docs/screenshots.py``) each page is saved as a PNG.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.admin.browser import browser_page, chromium_or_skip, screenshot
from tests.conftest import FIXTURE_SERVER
from tests.e2e.flow import audit_rows
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, gateway_payload
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import approvals
from toolcrib.gateway.identity import members

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PAGES = {
    "connections": "Connections",
    "members": "Members and tokens",
    "restrictions": "Restrictions",
    "approvals": "Approvals",
    "frozen": "Frozen parameters",
    "audit": "Audit log",
    "playground": "Search playground",
    "savings": "Savings",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    gw: Gateway
    base: str
    owner: str
    member: str


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    chromium_or_skip()
    settings = settings_for(
        tmp_path_factory.mktemp("browser"), policy_cache_seconds=0, allow_remote_stdio=True
    )
    async with open_gateway(settings) as gw:
        owner = await owner_token(gw)
        await members.add_member(gw.store, "mia", "member", actor=OPERATOR)
        _, member = await members.create_token(gw.store, "mia", members.DEFAULT_SCOPES, actor=OPERATOR)
        async with serve(gw) as base:
            yield Served(gw, base, owner, member)


async def _sign_in(page: Any, token: str) -> None:
    await page.goto("/admin/login")
    await page.fill('input[name="token"]', token)
    await page.click('button:has-text("Sign in")')
    await page.wait_for_url("**/admin/connections")


async def _add_connection(page: Any) -> None:
    form = page.locator("#add-connection")
    await form.locator('input[name="name"]').fill("fx")
    await form.locator('input[name="connector"]').fill("Fixture")
    await form.locator('input[value="stdio"]').check()
    await form.locator('input[name="command"]').fill(shlex.join(FIXTURE_SERVER))
    await form.locator('button:has-text("Connect")').click()
    await page.wait_for_url("**/admin/connections?done=connection_created")
    row = page.locator('tr.conn[data-name="fx"]')
    assert await row.locator(".status").inner_text() == "active"
    await row.page.locator("tr.tools summary").first.click()


async def _block_for_role(page: Any) -> None:
    await page.goto("/admin/restrictions")
    form = page.locator("#add-rule")
    await form.locator('select[name="effect"]').select_option("block")
    await form.locator('select[name="target_kind"]').select_option("role")
    await form.locator('input[name="target"]').fill("member")
    await form.locator('input[name="account"]').fill("fx")
    await form.locator('input[name="tool"]').fill("add_numbers")
    await form.locator('button:has-text("Add rule")').click()
    await page.wait_for_url("**/admin/restrictions?done=rule_created")
    assert "blocks" in await page.locator("tr.rule").first.inner_text()
    explain = page.locator("#explain")
    await explain.locator('input[name="who"]').fill("mia")
    await explain.locator('input[name="tool"]').fill("fx__add_numbers")
    await explain.locator('button:has-text("Explain")').click()
    await page.locator(".explained li").first.wait_for()
    assert "blocks" in await page.locator(".explained").inner_text()


async def _search_as_member(page: Any) -> None:
    await page.goto("/admin/playground")
    form = page.locator("#playground")
    await form.locator('select[name="member"]').select_option("mia")
    await form.locator('input[name="query"]').fill("add two numbers and return their sum")
    await form.locator('button:has-text("Search")').click()
    withheld = page.locator("ul.withheld li")
    await withheld.first.wait_for()
    text = await withheld.first.inner_text()
    assert "fx__add_numbers" in text
    assert "blocks" in text
    cards = await page.locator(".card.result code.tool-name").all_inner_texts()
    assert "fx__add_numbers" not in cards


async def test_13_in_a_real_browser_an_admin_connects_blocks_searches_as_a_member_and_audits(
    served: Served,
) -> None:
    async with browser_page(served.base) as page:
        violations: list[str] = []
        page.on(
            "console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None
        )
        await _sign_in(page, served.owner)
        await _add_connection(page)
        await screenshot(page, "connections")
        await _block_for_role(page)
        await screenshot(page, "restrictions")
        await _search_as_member(page)
        await screenshot(page, "playground")
        async with connect(served.base, served.owner) as client:
            await client.list_tools()
            result = await client.call_tool(
                "execute_tool", {"tool": "fx__echo_message", "arguments": {"message": "hello"}}
            )
            assert not result.is_error
            await client.call_tool("search_tools", {"query": "echo a message"})
        await page.goto("/admin/audit?operation=fx__echo_message")
        row = page.locator("tr.audit-row").first
        assert "fx__echo_message" in await row.inner_text()
        assert await row.locator(".outcome").inner_text() == "ok"
        await screenshot(page, "audit")
        for slug, title in PAGES.items():
            await page.goto(f"/admin/{slug}")
            assert await page.locator("h1").inner_text() == title
            if slug in ("members", "frozen", "savings"):
                await screenshot(page, slug)
        assert violations == []


async def test_13_in_a_real_browser_a_hostile_connector_name_runs_no_script(served: Served) -> None:
    async with browser_page(served.base) as page:
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))
        await _sign_in(page, served.owner)
        form = page.locator("#add-connection")
        await form.locator('input[name="name"]').fill("hostile")
        await form.locator('input[name="connector"]').fill('<img src=x onerror="alert(1)">')
        await form.locator('input[name="url"]').fill("http://127.0.0.1:9/mcp")
        await form.locator('button:has-text("Connect")').click()
        await page.wait_for_load_state()
        await page.goto("/admin/connections")
        assert await page.locator('tr.conn[data-name="hostile"] td').nth(1).inner_text() == (
            '<img src=x onerror="alert(1)">'
        )
        assert dialogs == []


async def _held_call(served: Served, token: str, ticket: str) -> Any:
    async with connect(served.base, token) as client:
        return await client.call_tool(
            "execute_tool", {"tool": "ops__delete_ticket", "arguments": {"ticket_id": ticket}}
        )


async def test_14_in_a_real_browser_an_admin_approves_a_held_call_from_its_approval_link(
    served: Served,
) -> None:
    row = await add_connection(
        served.gw, "ops", connector="Ops desk", command=list(FIXTURE_SERVER), actor=OPERATOR
    )
    assert row.status == "active", row.reason
    await approvals.set_approval_rule(served.gw, "destructive", account="ops", actor=OPERATOR)
    _, mia = await members.create_token(
        served.gw.store, "mia", "mcp:tools mcp:read mcp:write mcp:destructive", actor=OPERATOR
    )
    ticket = 'TCK-2187 "close and wipe" <b>now</b>'
    held = gateway_payload(await _held_call(served, mia, ticket))["error"]
    assert held["code"] == "approval_required"
    async with browser_page(served.base) as page:
        violations: list[str] = []
        page.on(
            "console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None
        )
        await _sign_in(page, served.owner)
        await page.click('header nav a:has-text("Approvals")')
        await page.click(f'a[href="/admin/approvals/{held["approval_id"]}"]')
        assert held["approval_url"].endswith(page.url.removeprefix(served.base))
        assert await page.locator("#tool").inner_text() == "ops__delete_ticket"
        assert await page.locator("#classification").inner_text() == "destructive"
        assert ticket.replace('"', '\\"') in await page.locator("#arguments").inner_text()
        await screenshot(page, "approvals")
        await page.locator("#approve button").click()
        await page.wait_for_url("**?done=approval_approved")
        assert await page.locator("#approval-status").inner_text() == "approved"
        assert violations == []
    ran = await _held_call(served, mia, ticket)
    assert not ran.is_error, ran
    rows = [r for r in await audit_rows(served.gw, "ops__delete_ticket") if r.outcome == "ok"]
    assert [r.approved_by for r in rows] == ["owner"]
