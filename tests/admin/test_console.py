"""The admin console in-process (#13): sign-in, CSRF, CSP, role-limited pages, escaping, actions.

One gateway for the module with a real HTTP connection (``desk``, the fixture server); each test
signs in with its own cookie jar. Actions are checked by their effect in the store and by the
in-band code the page shows, never by message text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.admin.console import Console, console, hidden, sign_in
from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from tests.web.asgi import MCP_HEADERS, bearer, call_tool
from toolcrib.gateway.connections.catalogs import install_catalog
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity import members
from toolcrib.store import connections as connection_store
from toolcrib.store import members as member_store

pytestmark = pytest.mark.anyio

HOSTILE = '<script>alert("x")</script>'
PAGES = (
    "connections",
    "members",
    "restrictions",
    "approvals",
    "frozen",
    "changes",
    "audit",
    "playground",
    "savings",
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Org:
    c: Console
    owner: str

    async def token(self, name: str, role: str, scopes: str = members.DEFAULT_SCOPES) -> str:
        if await member_store.get_member(self.c.gw.store.db, name) is None:
            await members.add_member(self.c.gw.store, name, role, actor=OPERATOR)
        return (await members.create_token(self.c.gw.store, name, scopes, actor=OPERATOR))[1]


@pytest.fixture(scope="module")
async def org(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Org]:
    settings = settings_for(tmp_path_factory.mktemp("console"), policy_cache_seconds=0)
    async with open_gateway(settings) as gw:
        token = await owner_token(gw)
        row = await add_connection(gw, "desk", connector=HOSTILE, url=fixture_http.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        async with console(gw) as c:
            yield Org(c, token)


async def test_13_signed_out_console_pages_send_to_the_sign_in_form(org: Org) -> None:
    http = await org.c.browser()
    for slug in PAGES:
        answer = await http.get(f"/admin/{slug}")
        assert (answer.status_code, answer.headers["location"]) == (303, "/admin/login")
    posted = await http.post("/admin/members/invite", data={"name": "mallory", "role": "owner"})
    assert posted.status_code == 303
    assert await member_store.get_member(org.c.gw.store.db, "mallory") is None


async def test_13_sign_in_sets_an_httponly_samesite_strict_cookie_secure_over_https(org: Org) -> None:
    for base, secure in (("http://toolcrib.test", False), ("https://toolcrib.test", True)):
        http = await org.c.browser(base)
        answer = await sign_in(http, org.owner)
        assert answer.status_code == 303
        cookie = next(
            v for k, v in answer.headers.multi_items() if k == "set-cookie" and "toolcrib_admin=" in v
        )
        attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
        assert {"httponly", "path", "max-age"} <= attributes
        assert "samesite=strict" in cookie.lower()
        assert ("secure" in attributes) is secure
        assert org.owner not in cookie  # the token is sealed, never in clear
        assert (await http.get("/admin/connections")).status_code == 200


async def test_13_an_unknown_token_does_not_sign_in(org: Org) -> None:
    http = await org.c.browser()
    answer = await sign_in(http, "tc_not-a-token")
    assert answer.status_code == 401
    assert "<code>unauthenticated</code>" in answer.text
    assert (await http.get("/admin/connections")).status_code == 303


async def test_13_sign_in_without_the_forms_nonce_is_refused(org: Org) -> None:
    http = await org.c.browser()
    await http.get("/admin/login")
    answer = await http.post("/admin/login", data={"token": org.owner, "nonce": "forged"})
    assert answer.status_code == 403
    assert "toolcrib_admin=" not in answer.headers.get("set-cookie", "")


async def test_13_every_console_answer_has_a_strict_csp_and_cannot_be_framed(org: Org) -> None:
    http, _ = await org.c.signed_in(org.owner)
    for path in ("/admin/login", *(f"/admin/{slug}" for slug in PAGES), "/admin/static/admin.js"):
        headers = (await http.get(path)).headers
        csp = headers["content-security-policy"]
        assert "default-src 'self'" in csp, path
        assert "frame-ancestors 'none'" in csp, path
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"


async def test_13_no_page_carries_an_inline_script_or_style(org: Org) -> None:
    http, _ = await org.c.signed_in(org.owner)
    for slug in PAGES:
        html = (await http.get(f"/admin/{slug}")).text
        assert "<script>" not in html.replace(HOSTILE, "")
        assert " style=" not in html
        assert " onclick=" not in html
        assert "javascript:" not in html


async def test_13_a_post_without_the_sessions_csrf_token_changes_nothing(org: Org) -> None:
    http, csrf = await org.c.signed_in(org.owner)
    for data in ({"name": "eve", "role": "admin"}, {"name": "eve", "role": "admin", "csrf": "forged"}):
        answer = await http.post("/admin/members/invite", data=data)
        assert answer.status_code == 403
        assert "<code>csrf_failed</code>" in answer.text
    cross = await http.post(
        "/admin/members/invite",
        data={"name": "eve", "role": "admin", "csrf": csrf},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert await member_store.get_member(org.c.gw.store.db, "eve") is None


async def test_13_another_sessions_csrf_token_is_refused(org: Org) -> None:
    http, _ = await org.c.signed_in(org.owner)
    _, other_csrf = await org.c.signed_in(org.owner)
    answer = await http.post(
        "/admin/members/invite", data={"name": "eve2", "role": "admin", "csrf": other_csrf}
    )
    assert answer.status_code == 403
    assert await member_store.get_member(org.c.gw.store.db, "eve2") is None


async def test_r7_1_a_member_sees_only_the_pages_their_role_allows(org: Org) -> None:
    http, _ = await org.c.signed_in(await org.token("pat", "member"))
    page = (await http.get("/admin/connections")).text
    assert 'href="/admin/playground"' in page
    for slug in ("members", "restrictions", "approvals", "frozen", "changes", "audit", "savings"):
        assert f'href="/admin/{slug}"' not in page
        answer = await http.get(f"/admin/{slug}")
        assert answer.status_code == 403
        assert "<code>permission_required</code>" in answer.text
    assert 'action="/admin/connections/create"' not in page  # connections:read only
    assert 'action="/admin/connections/delete"' not in page


async def test_r7_1_an_auditor_reads_the_audit_log_and_members_but_changes_nothing(org: Org) -> None:
    http, csrf = await org.c.signed_in(await org.token("audrey", "auditor", "mcp:read"))
    assert (await http.get("/admin/audit")).status_code == 200
    people = await http.get("/admin/members")
    assert people.status_code == 200
    assert 'action="/admin/members/invite"' not in people.text
    assert (await http.get("/admin/playground")).status_code == 403
    forged = await http.post("/admin/members/invite", data={"name": "mole", "role": "owner", "csrf": csrf})
    assert forged.status_code == 403
    assert "<code>permission_required</code>" in forged.text
    assert await member_store.get_member(org.c.gw.store.db, "mole") is None


async def test_r10_2_a_console_action_answers_the_same_code_as_rest(org: Org) -> None:
    http, csrf = await org.c.signed_in(org.owner)
    form = {"csrf": csrf, "name": "shell", "connector": "Shell", "transport": "stdio", "command": "sh -c id"}
    answer = await http.post("/admin/connections/create", data=form)
    rest = await http.post(
        "/api/connections/create",
        json={"name": "shell", "connector": "Shell", "command": "sh -c id"},
        headers=bearer(org.owner),
    )
    assert rest.json()["error"]["code"] == "forbidden"
    assert (answer.status_code, rest.status_code) == (403, 403)
    assert "<code>forbidden</code>" in answer.text
    assert "shell" not in org.c.gw.catalog.connections


async def test_13_hostile_names_are_escaped_on_every_page(org: Org) -> None:
    http, csrf = await org.c.signed_in(org.owner)
    await call_tool(
        http, org.owner, "execute_tool", {"tool": "desk__delete_ticket", "arguments": {"ticket_id": HOSTILE}}
    )
    await http.post(
        "/admin/playground", data={"csrf": csrf, "member": "owner", "query": HOSTILE, "limit": "3"}
    )
    for path in ("/admin/connections", "/admin/audit", "/admin/restrictions?who=owner&tool=" + HOSTILE):
        html = (await http.get(path)).text
        assert HOSTILE not in html, path
        assert "&lt;script&gt;" in html, path
    played = await http.post("/admin/playground", data={"csrf": csrf, "member": "owner", "query": HOSTILE})
    assert HOSTILE not in played.text
    assert "&lt;script&gt;" in played.text


async def test_r13_6_the_connections_page_shows_an_authorize_link_to_who_started_it_alone(
    org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``desk`` reads as an OAuth connection whose authorization the owner started (the flows
    themselves are ``tests/e2e/test_oauth_binding.py``'s): the owner's page has the link (the
    gateway's own start page); another admin's has none."""
    gw = org.c.gw
    token = "t" * 43

    def pending_link(account: str, member: str, starter: str) -> str | None:
        return token if (account, starter) == ("desk", "owner") else None

    monkeypatch.setattr(gw.upstreams.authorizer, "pending_link", pending_link)
    owner, _ = await org.c.signed_in(org.owner)
    other, _ = await org.c.signed_in(await org.token("otto", "admin"))
    await _set_auth(org, "oauth")
    try:
        shown = (await owner.get("/admin/connections")).text
        hidden_from = (await other.get("/admin/connections")).text
    finally:
        await _set_auth(org, None)
    assert f'href="{gw.settings.resource_url}/admin/oauth/start/{token}"' in shown
    assert "Authorize at the provider" in shown
    assert token not in hidden_from
    assert "Authorize at the provider" not in hidden_from


async def _set_auth(org: Org, auth: str | None) -> None:
    """Mark desk as an OAuth connection (or not) in the store and the live catalog."""
    gw = org.c.gw
    await connection_store.update_connection(gw.store.db, "desk", auth=auth)
    row = await connection_store.get_connection(gw.store.db, "desk")
    assert row is not None
    await install_catalog(gw, row, await connection_store.load_catalog(gw.store.db, "desk"))


async def test_13_a_new_token_is_shown_once_and_works(org: Org) -> None:
    await org.token("tina", "member")
    http, csrf = await org.c.signed_in(org.owner)
    made = await http.post(
        "/admin/tokens/create", data={"csrf": csrf, "member": "tina", "scopes": ["mcp:tools", "mcp:read"]}
    )
    assert made.status_code == 200
    token = made.text.split('id="new-token">', 1)[1].split("<", 1)[0]
    listed = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **bearer(token)},
    )
    assert listed.status_code == 200
    assert token not in (await http.get("/admin/members")).text


async def test_r7_6_revoking_the_token_ends_its_console_session(org: Org) -> None:
    token = await org.token("rhea", "admin", "mcp:tools mcp:read mcp:write mcp:destructive")
    http, _ = await org.c.signed_in(token)
    assert (await http.get("/admin/members")).status_code == 200
    admin, csrf = await org.c.signed_in(org.owner)
    grant = next(
        g for g in await members.list_tokens(org.c.gw.store, "rhea", actor=OPERATOR) if g.revoked_at is None
    )
    revoked = await admin.post("/admin/tokens/revoke", data={"csrf": csrf, "id": grant.id})
    assert revoked.status_code == 303
    assert (await http.get("/admin/members")).status_code == 303


async def test_13_suspend_and_reactivate_a_member_from_the_console(org: Org) -> None:
    token = await org.token("sam", "member")
    http, csrf = await org.c.signed_in(org.owner)
    assert (await http.post("/admin/members/suspend", data={"csrf": csrf, "name": "sam"})).status_code == 303
    denied = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **bearer(token)},
    )
    assert denied.status_code == 401
    assert (
        await http.post("/admin/members/reactivate", data={"csrf": csrf, "name": "sam"})
    ).status_code == 303
    # suspension revoked every grant of sam: reactivated, sam needs a new token
    again = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **bearer(token)},
    )
    assert again.status_code == 401
    fresh = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **bearer(await org.token("sam", "member"))},
    )
    assert fresh.status_code == 200


async def test_13_sign_out_clears_the_session(org: Org) -> None:
    http, csrf = await org.c.signed_in(org.owner)
    out = await http.post("/admin/logout", data={"csrf": csrf})
    assert out.status_code == 303
    assert 'toolcrib_admin=""' in out.headers["set-cookie"]
    assert (await http.get("/admin/connections")).status_code == 303


async def test_r8_6_the_playground_shows_a_withheld_tool_and_the_rule_behind_it(org: Org) -> None:
    await org.token("wes", "member")
    http, csrf = await org.c.signed_in(org.owner)
    made = await http.post(
        "/admin/restrictions/create",
        data={
            "csrf": csrf,
            "effect": "block",
            "target_kind": "user",
            "target": "wes",
            "tool": "echo_message",
        },
    )
    assert made.status_code == 303
    played = await http.post(
        "/admin/playground", data={"csrf": csrf, "member": "wes", "query": "echo a message back"}
    )
    withheld = played.text.split("<h2>Withheld</h2>", 1)[1]
    assert "desk__echo_message" in withheld
    assert "blocks" in withheld
    answer = json.loads(
        played.text.split('<pre class="json">', 1)[1].split("</pre>", 1)[0].replace("&#34;", '"')
    )
    assert "desk__echo_message" in answer["restricted"]
    size = int(played.text.split('id="answer-bytes">', 1)[1].split("<", 1)[0])
    assert size == len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())
    rule = next(
        r for r in await restrictions.list_restrictions(org.c.gw.policy, actor=OPERATOR) if r.target == "wes"
    )
    await restrictions.remove_restriction(org.c.gw.store, rule.id, actor=OPERATOR)


async def test_13_audit_exports_select_by_filter_and_defuse_formulas(org: Org) -> None:
    http, _ = await org.c.signed_in(org.owner)
    await call_tool(
        http, org.owner, "execute_tool", {"tool": "desk__delete_ticket", "arguments": {"ticket_id": "=1+2"}}
    )
    rows = list(
        csv.DictReader(io.StringIO((await http.get("/admin/audit.csv?operation=desk__delete_ticket")).text))
    )
    assert rows
    assert {r["operation"] for r in rows} == {"desk__delete_ticket"}
    assert "'=1+2" in {r["target_id"] for r in rows}
    listed = (await http.get("/admin/audit.json?operation=desk__delete_ticket")).json()
    assert [r["id"] for r in listed] == [int(r["id"]) for r in rows]
    assert "=1+2" in {r["target_id"] for r in listed}
    bad = await http.get("/admin/audit?since=yesterday")
    assert bad.status_code == 400
    assert "<code>invalid_arguments</code>" in bad.text


async def test_13_audit_pages_hold_fifty_rows_and_link_the_next(org: Org) -> None:
    http, _ = await org.c.signed_in(org.owner)
    for n in range(51):
        await call_tool(
            http, org.owner, "execute_tool", {"tool": "desk__add_numbers", "arguments": {"a": n, "b": 1}}
        )
    first = (await http.get("/admin/audit?operation=desk__add_numbers")).text
    assert first.count('class="audit-row"') == 50
    assert "page=2" in first
    second = (await http.get("/admin/audit?operation=desk__add_numbers&page=2")).text
    assert second.count('class="audit-row"') >= 1


async def test_r14_1_the_savings_chart_draws_model_bytes_against_the_flat_listing(org: Org) -> None:
    http, csrf = await org.c.signed_in(org.owner)
    listed = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**MCP_HEADERS, **bearer(org.owner)},
    )
    assert listed.status_code == 200
    await call_tool(http, org.owner, "search_tools", {"query": "add two numbers"})
    page = (await http.get("/admin/savings")).text
    assert '<polyline class="model"' in page
    assert '<polyline class="flat"' in page
    model = int(page.split('id="model-bytes">', 1)[1].split("<", 1)[0])
    flat = int(page.split('id="flat-bytes">', 1)[1].split("<", 1)[0])
    assert 0 < model < flat
    assert hidden(page, "csrf") == csrf


async def test_r5_1_a_member_is_not_shown_a_forbidden_tool_on_the_connections_page(org: Org) -> None:
    await restrictions.classify_tool(org.c.gw, "desk", "crash_server", "forbidden", actor=OPERATOR)
    try:
        member, _ = await org.c.signed_in(await org.token("fay", "member"))
        owner, _ = await org.c.signed_in(org.owner)
        assert "desk__crash_server" not in (await member.get("/admin/connections")).text
        shown = (await owner.get("/admin/connections")).text
        row = shown.split("<code>desk__crash_server</code>", 1)[1].split("</tr>", 1)[0]
        assert "forbidden" in row
    finally:
        await restrictions.classify_tool(org.c.gw, "desk", "crash_server", "write", actor=OPERATOR)


async def test_r7_3_a_grant_short_of_mcp_read_gets_the_code_not_a_crash(org: Org) -> None:
    http, _ = await org.c.signed_in(await org.token("otto", "auditor", "mcp:tools"))
    answer = await http.get("/admin/connections")
    assert answer.status_code == 403
    assert "<code>scope_required</code>" in answer.text
    assert "Traceback" not in answer.text


async def test_r10_3_the_playground_diagnoses_a_tool_missing_for_the_member(org: Org) -> None:
    await org.token("gus", "member", "mcp:tools mcp:read")  # no mcp:write: write tools are hidden
    http, csrf = await org.c.signed_in(org.owner)
    form = {"csrf": csrf, "member": "gus", "query": "add two numbers", "tool": "desk__add_numbers"}
    played = await http.post("/admin/playground", data=form)
    assert played.status_code == 200
    assert '<code class="stopped-at">grant_scope</code>' in played.text
    cards = played.text.split("<h2>Cards</h2>", 1)[1].split("<h2>", 1)[0]
    assert "desk__add_numbers" not in cards


async def test_r16_1_the_connections_page_lists_a_connections_prompts_and_resources(org: Org) -> None:
    token = await org.token("ria", "member")
    rule = await restrictions.add_restriction(
        org.c.gw.store, effect="block", target_kind="user", target="ria", account="desk", tool="secret_*",
        actor=OPERATOR,
    )  # fmt: skip
    try:
        member, _ = await org.c.signed_in(token)
        owner, _ = await org.c.signed_in(org.owner)
        shown = (await owner.get("/admin/connections")).text
        seen_by_member = (await member.get("/admin/connections")).text
    finally:
        await restrictions.remove_restriction(org.c.gw.store, rule.id, OPERATOR)
    offerings = shown.split('<tr class="offerings"', 1)[1].split("</details>", 1)[0]
    assert "<code>desk__summarize_ticket</code>" in offerings
    assert "<code>toolcrib://desk/docs://handbook</code>" in offerings
    assert "<code>toolcrib://desk/tickets://{ticket_id}</code>" in offerings
    assert "toolcrib://desk/docs://secret-plan" in offerings
    assert "toolcrib://desk/docs://handbook" in seen_by_member
    assert "docs://secret-plan" not in seen_by_member
