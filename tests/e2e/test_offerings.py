"""Prompts and resources of connected servers through ``/mcp``, under the gates of tools (#34, SPEC
section 16): an SDK client against a real gateway in front of two real stdio fixture servers."""

from __future__ import annotations

import base64
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.conftest import FIXTURE_SERVER
from tests.e2e.flow import client
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import error_code, payload
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity import members
from toolcrib.store import audit as audit_store
from toolcrib.store.audit import AuditEntry, AuditFilter

pytestmark = [pytest.mark.anyio]

KEY = "fixture-resource-key-987654"
ALL_SCOPES = "mcp:tools mcp:read mcp:write mcp:destructive"
META_URI = "toolcrib/originalUri"


@dataclass
class Desks:
    gw: Gateway
    base: str
    owner: str
    _members: set[str] = field(default_factory=set)

    async def token(self, name: str, scopes: str = ALL_SCOPES, role: str = "member") -> str:
        if name not in self._members:
            await members.add_member(self.gw.store, name, role, actor=OPERATOR)
            self._members.add(name)
        return (await members.create_token(self.gw.store, name, scopes, actor=OPERATOR))[1]


@asynccontextmanager
async def desks(
    tmp_path: Path, *accounts: str, env: dict[str, str] | None = None, **values: Any
) -> AsyncIterator[Desks]:
    """A served gateway with one stdio fixture connection per name in ``accounts``."""
    settings = settings_for(tmp_path, policy_cache_seconds=0, connect_timeout_seconds=20, **values)
    async with open_gateway(settings) as gw:
        owner = await owner_token(gw)
        for account in accounts or ("desk",):
            given = {"FIXTURE_RESOURCES": "1", "FIXTURE_API_KEY": KEY, **(env or {})}
            row = await add_connection(
                gw, account, connector="Helpdesk", command=FIXTURE_SERVER, env=given, actor=OPERATOR
            )
            assert row.status == "active", row.reason
        async with serve(gw) as base:
            yield Desks(gw, base, owner)


async def _all_resources(c: Client) -> list[types.Resource]:
    found: list[types.Resource] = []
    cursor: str | None = None
    while True:
        page = await c.list_resources(cursor=cursor)
        found += page.resources
        cursor = page.next_cursor
        if not cursor:
            return found


async def _rows(gw: Gateway) -> list[AuditEntry]:
    return await audit_store.search(gw.store.db, AuditFilter())


def _code(exc: pytest.ExceptionInfo[MCPError]) -> str:
    return str(exc.value.data["code"])


async def test_r16_1_an_sdk_client_lists_gets_reads_fills_and_follows_a_link_through_mcp(
    tmp_path: Path,
) -> None:
    async with desks(tmp_path) as d, client(d.base, d.owner) as c:
        caps = c.server_capabilities
        assert caps.prompts is not None
        assert caps.resources is not None
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert set(prompts) == {"desk__summarize_ticket", "desk__connection_help"}
        assert [a.name for a in prompts["desk__summarize_ticket"].arguments or []] == ["ticket_id", "tone"]
        got = await c.get_prompt("desk__summarize_ticket", {"ticket_id": "7", "tone": "calm"})
        assert isinstance(got.messages[0].content, types.TextContent)
        assert got.messages[0].content.text == "Summarize ticket 7 in a calm tone."

        resources = {r.name: r for r in await _all_resources(c)}
        handbook = resources["handbook"]
        assert handbook.uri == "toolcrib://desk/docs://handbook"
        assert (handbook.meta or {})[META_URI] == "docs://handbook"
        read = await c.read_resource(handbook.uri)
        (entry,) = read.contents
        assert isinstance(entry, types.TextResourceContents)
        assert entry.text == "The handbook: be kind to customers."
        assert entry.uri == handbook.uri

        (template,) = (await c.list_resource_templates()).resource_templates
        assert template.uri_template == "toolcrib://desk/tickets://{ticket_id}"
        filled = await c.read_resource(template.uri_template.replace("{ticket_id}", "99"))
        assert isinstance(filled.contents[0], types.TextResourceContents)
        assert filled.contents[0].text == "Ticket 99: printer on fire."

        found = payload(await c.call_tool("search_tools", {"query": "link a ticket document"}))
        assert "desk__link_document" in [card["name"] for card in found["results"]]
        result = await c.call_tool("execute_tool", {"tool": "desk__link_document", "arguments": {}})
        link, embedded = result.content
        assert isinstance(link, types.ResourceLink)
        assert isinstance(embedded, types.EmbeddedResource)
        assert link.uri == "toolcrib://desk/tickets://42"
        assert (link.meta or {})[META_URI] == "tickets://42"
        assert embedded.resource.uri == "toolcrib://desk/docs://handbook"
        linked = await c.read_resource(link.uri)
        assert isinstance(linked.contents[0], types.TextResourceContents)
        assert linked.contents[0].text == "Ticket 42: printer on fire."

        rows = [r for r in await _rows(d.gw) if r.kind in ("prompt", "resource")]
    kinds = sorted((r.kind, r.account, r.target_id, r.outcome) for r in rows)
    assert kinds == [
        ("prompt", "desk", "summarize_ticket", "ok"),
        ("resource", "desk", "docs://handbook", "ok"),
        ("resource", "desk", "tickets://42", "ok"),
        ("resource", "desk", "tickets://99", "ok"),
    ]


async def test_r2_2_tools_list_is_unchanged_by_prompts_and_resources(tmp_path: Path) -> None:
    async with desks(tmp_path) as d, client(d.base, d.owner) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        hidden = await c.call_tool("toolcrib__resources__read", {"uri": "toolcrib://desk/docs://handbook"})
    assert error_code(hidden) == "not_found"  # a REST and command-line operation, not an MCP tool
    assert names[:2] == ["search_tools", "execute_tool"]
    assert not [n for n in names if n.startswith("desk__")]
    assert not [n for n in names if "prompts" in n or "resources" in n]


async def test_r16_1_two_connections_of_one_server_do_not_collide(tmp_path: Path) -> None:
    async with desks(tmp_path, "desk", "desk-two") as d, client(d.base, d.owner) as c:
        handbooks = [r for r in await _all_resources(c) if (r.meta or {})[META_URI] == "docs://handbook"]
        assert sorted(r.uri for r in handbooks) == [
            "toolcrib://desk-two/docs://handbook",
            "toolcrib://desk/docs://handbook",
        ]
        prompts = sorted(p.name for p in (await c.list_prompts()).prompts)
        assert prompts == [
            "desk-two__connection_help",
            "desk-two__summarize_ticket",
            "desk__connection_help",
            "desk__summarize_ticket",
        ]
        await c.read_resource("toolcrib://desk-two/docs://handbook")
        rows = [r for r in await _rows(d.gw) if r.kind == "resource"]
    assert [(r.account, r.target_id) for r in rows] == [("desk-two", "docs://handbook")]


async def test_r16_1_pages_cross_connections_with_opaque_cursors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolcrib.gateway.resources import listing

    monkeypatch.setattr(listing, "PAGE_SIZE", 3)
    async with desks(tmp_path, "desk", "desk-two") as d, client(d.base, d.owner) as c:
        pages: list[list[str]] = []
        cursor: str | None = None
        while True:
            page = await c.list_resources(cursor=cursor)
            pages.append([r.uri for r in page.resources])
            cursor = page.next_cursor
            if not cursor:
                break
            assert "desk" not in cursor  # opaque: no account in clear
        with pytest.raises(MCPError) as bad:
            await c.list_resources(cursor="not-a-cursor")
    flat = [u for p in pages for u in p]
    assert [len(p) for p in pages] == [3, 3, 3, 3]
    assert len(set(flat)) == 12
    assert _code(bad) == "invalid_arguments"


async def test_r16_2_a_member_restricted_from_one_resource_neither_sees_nor_reads_it(tmp_path: Path) -> None:
    async with desks(tmp_path) as d:
        alice = await d.token("alice")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="alice", account="desk", tool="secret_*",
            actor=OPERATOR,
        )  # fmt: skip
        async with client(d.base, alice) as c:
            uris = [r.uri for r in await _all_resources(c)]
            assert "toolcrib://desk/docs://handbook" in uris
            assert "toolcrib://desk/docs://secret-plan" not in uris
            with pytest.raises(MCPError) as withheld:
                await c.read_resource("toolcrib://desk/docs://secret-plan")
            with pytest.raises(MCPError) as unknown:
                await c.read_resource("toolcrib://desk/docs://no-such-thing")
            with pytest.raises(MCPError) as nowhere:
                await c.read_resource("toolcrib://nowhere/docs://handbook")
        async with client(d.base, d.owner) as c:
            assert "toolcrib://desk/docs://secret-plan" in [r.uri for r in await _all_resources(c)]
        rows = [r for r in await _rows(d.gw) if r.kind == "resource"]
    assert _code(withheld) == _code(unknown) == _code(nowhere) == "not_found"
    assert withheld.value.error.code == unknown.value.error.code
    assert "secret" not in withheld.value.message.replace("secret-plan", "")
    assert [r.target_id for r in rows] == ["docs://no-such-thing"]  # the withheld read reached nothing


async def test_r16_2_an_account_rule_covers_its_prompts_and_a_tool_pattern_matches_prompt_names(
    tmp_path: Path,
) -> None:
    async with desks(tmp_path, "desk", "desk-two") as d:
        bob = await d.token("bob")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="bob", account="desk-two", actor=OPERATOR
        )
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="bob", tool="connection_*", actor=OPERATOR
        )
        async with client(d.base, bob) as c:
            assert [p.name for p in (await c.list_prompts()).prompts] == ["desk__summarize_ticket"]
            assert not [r for r in await _all_resources(c) if r.uri.startswith("toolcrib://desk-two/")]
            with pytest.raises(MCPError) as pattern:
                await c.get_prompt("desk__connection_help")
            with pytest.raises(MCPError) as account:
                await c.get_prompt("desk-two__summarize_ticket", {"ticket_id": "1"})
            with pytest.raises(MCPError) as unknown:
                await c.get_prompt("desk__no_such_prompt")
    assert _code(pattern) == _code(account) == "not_found"
    assert _code(unknown) == "not_found"


async def test_r16_2_reading_needs_the_mcp_read_scope(tmp_path: Path) -> None:
    async with desks(tmp_path) as d:
        writer = await d.token("carol", scopes="mcp:tools mcp:write")
        async with client(d.base, writer) as c:
            assert (await c.list_prompts()).prompts == []
            assert (await c.list_resources()).resources == []
            with pytest.raises(MCPError) as refused:
                await c.read_resource("toolcrib://desk/docs://handbook")
            with pytest.raises(MCPError) as prompt:
                await c.get_prompt("desk__summarize_ticket", {"ticket_id": "1"})
        rows = [r for r in await _rows(d.gw) if r.kind in ("prompt", "resource")]
    assert _code(refused) == _code(prompt) == "scope_required"
    assert refused.value.data["scope"] == "mcp:read"
    assert rows == []


async def test_r16_2_results_are_redacted_and_a_blob_over_the_cap_is_left_out_whole(tmp_path: Path) -> None:
    async with desks(tmp_path) as d, client(d.base, d.owner) as c:
        config = await c.read_resource("toolcrib://desk/docs://config")
        help_text = await c.get_prompt("desk__connection_help")
        logo = await c.read_resource("toolcrib://desk/files://logo.png")
        big = await c.read_resource("toolcrib://desk/files://big.bin")
        result_id = (big.meta or {})["toolcrib_result_id"]  # kept in full
        stored = await c.call_tool("toolcrib__results__read", {"result_id": result_id, "length": 200})
    (entry,) = config.contents
    assert isinstance(entry, types.TextResourceContents)
    assert KEY not in entry.text
    assert "[REDACTED]" in entry.text
    content = help_text.messages[0].content
    assert isinstance(content, types.TextContent)
    assert KEY not in content.text
    assert "[REDACTED]" in content.text
    (small,) = logo.contents
    assert isinstance(small, types.BlobResourceContents)
    assert base64.b64decode(small.blob) == b"\x89PNG fixture"
    (cut,) = big.contents
    assert isinstance(cut, types.TextResourceContents)  # never a fragment of the blob
    assert (cut.meta or {})["toolcrib_truncated"] is True
    assert (big.meta or {})["toolcrib_truncated"] is True
    assert cut.uri == "toolcrib://desk/files://big.bin"
    page = payload(stored)["result"]
    full = base64.b64encode(bytes(range(256)) * 176).decode()
    assert page["total"] > len(full)
    assert page["data"].startswith('{"contents": [{"uri": "toolcrib://desk/files://big.bin"')
    assert "toolcrib-fixture" not in str(big.meta)  # the upstream's serverInfo is its own


async def test_r9_2_a_secret_frozen_value_is_redacted_from_a_read_and_its_audit_entry(tmp_path: Path) -> None:
    from toolcrib.gateway.governance.restrictions import set_frozen

    frozen = "frozensecret42value"
    async with desks(tmp_path) as d:
        await set_frozen(d.gw, OPERATOR, "desk", "echo_message", "message", frozen, secret=True)
        async with client(d.base, d.owner) as c:
            read = await c.read_resource(f"toolcrib://desk/tickets://{frozen}")
        rows = [r for r in await _rows(d.gw) if r.kind == "resource"]
    (entry,) = read.contents
    assert isinstance(entry, types.TextResourceContents)
    assert frozen not in entry.text
    assert "[REDACTED]" in entry.text
    assert frozen not in entry.uri + str(entry.meta)
    assert [r.target_id for r in rows] == ["tickets://[REDACTED]"]


async def test_r8_6_restrictions_explain_says_the_rule_decides_prompts_and_resources_alike(
    tmp_path: Path,
) -> None:
    async with desks(tmp_path) as d:
        await d.token("dan")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="dan", tool="secret_*", actor=OPERATOR
        )
        lines = await restrictions.explain_restriction(
            d.gw, user="dan", role=None, tool="desk__secret_plan", actor=OPERATOR
        )
    assert lines[0].endswith("withheld")
    assert lines[-1] == "the same rules decide a prompt or resource named secret_plan of desk (R-16.2)"


async def test_r16_3_an_upstreams_resource_list_change_reaches_the_clients_that_may_reach_it(
    tmp_path: Path,
) -> None:
    told: list[Any] = []
    not_told: list[Any] = []

    async def note(into: list[Any], message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            into.append(message)

    async with desks(tmp_path, stateless=False) as d:
        await d.token("bob")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="bob", account="desk", actor=OPERATOR
        )
        bob = await d.token("bob")
        async with (
            client(d.base, d.owner, mode="legacy", message_handler=partial(note, told)) as c,
            client(d.base, bob, mode="legacy", message_handler=partial(note, not_told)) as b,
        ):
            assert c.server_capabilities.resources is not None
            assert c.server_capabilities.resources.list_changed
            before = [r.uri for r in await _all_resources(c)]
            await _all_resources(b)
            grown = await c.call_tool("execute_tool", {"tool": "desk__grow_resources", "arguments": {}})
            assert not grown.is_error, grown
            with anyio.fail_after(20):
                while not told:  # noqa: ASYNC110 - the notification arrives on the client's stream
                    await anyio.sleep(0.05)
            after = [r.uri for r in await _all_resources(c)]
    assert "toolcrib://desk/docs://added" not in before
    assert "toolcrib://desk/docs://added" in after  # listed again: the change emptied the listing
    assert not_told == []


async def test_r16_3_resources_subscribe_passes_through_and_the_update_comes_back_by_gateway_uri(
    tmp_path: Path,
) -> None:
    updated: list[str] = []

    async def note(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(message.params.uri)

    handbook = "toolcrib://desk/docs://handbook"
    async with (
        desks(tmp_path, stateless=False) as d,
        client(d.base, d.owner, mode="legacy", message_handler=note) as c,
    ):
        assert c.server_capabilities.resources is not None
        assert c.server_capabilities.resources.subscribe
        with warnings.catch_warnings():  # resources/subscribe is of the era before 2026-07-28
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await c.subscribe_resource(handbook)
        touched = await c.call_tool("execute_tool", {"tool": "desk__touch_handbook", "arguments": {}})
        assert not touched.is_error, touched
        with anyio.fail_after(20):
            while not updated:  # noqa: ASYNC110 - the notification arrives on the client's stream
                await anyio.sleep(0.05)
    assert set(updated) == {handbook}  # (a level trigger: the upstream may say it more than once)


async def test_r16_3_an_mcp_apps_view_stays_a_ui_uri_through_the_gateway_and_the_result_names_it(
    tmp_path: Path,
) -> None:
    view = "ui://toolcrib/desk/desk-view/app.html"
    async with desks(tmp_path, "desk", "desk-two") as d, client(d.base, d.owner) as c:
        listed = {r.uri: r for r in await _all_resources(c)}
        read = await c.read_resource(view)
        result = await c.call_tool("execute_tool", {"tool": "desk__link_document", "arguments": {}})
    assert (listed[view].meta or {})[META_URI] == "ui://desk-view/app.html"
    assert "ui://toolcrib/desk-two/desk-view/app.html" in listed  # no collision between connections
    assert listed[view].mime_type == "text/html;profile=mcp-app"
    (entry,) = read.contents
    assert isinstance(entry, types.TextResourceContents)
    assert entry.uri == view
    assert "desk view" in entry.text
    assert (result.meta or {})["ui"] == {"resourceUri": view}


async def test_r16_2_a_uri_that_fills_a_withheld_template_is_withheld_even_when_a_tool_linked_it(
    tmp_path: Path,
) -> None:
    async with desks(tmp_path) as d:
        eve = await d.token("eve")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="eve", tool="ticket", actor=OPERATOR
        )
        async with client(d.base, eve) as c:
            assert (await c.list_resource_templates()).resource_templates == []
            result = await c.call_tool("execute_tool", {"tool": "desk__link_document", "arguments": {}})
            link = result.content[0]
            assert isinstance(link, types.ResourceLink)
            with pytest.raises(MCPError) as withheld:
                await c.read_resource(link.uri)
            handbook = await c.read_resource("toolcrib://desk/docs://handbook")
    assert withheld.value.data["code"] == "not_found"
    assert handbook.contents


async def test_r13_2_a_connection_holds_a_bounded_number_of_resource_subscriptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each subscription is a stream at a 2026-07-28 upstream: a client cannot make the gateway
    hold them without end."""
    from toolcrib.upstream import session

    monkeypatch.setattr(session, "MAX_SUBSCRIPTIONS", 2)
    async with (
        desks(tmp_path, stateless=False) as d,
        client(d.base, d.owner, mode="legacy") as c,
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for n in (1, 2, 2):  # the same URI again holds no second stream
                await c.subscribe_resource(f"toolcrib://desk/tickets://{n}")
            with pytest.raises(MCPError) as refused:
                await c.subscribe_resource("toolcrib://desk/tickets://3")
            await c.unsubscribe_resource("toolcrib://desk/tickets://1")
            await c.subscribe_resource("toolcrib://desk/tickets://3")  # room again
    assert refused.value.data["code"] == "invalid_arguments"


async def test_r16_3_a_2026_client_listens_for_changes_and_updates_of_what_it_may_reach(
    tmp_path: Path,
) -> None:
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    handbook = "toolcrib://desk/docs://handbook"
    async with desks(tmp_path, stateless=False) as d:
        await d.token("bob")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="bob", account="desk", actor=OPERATOR
        )
        bob = await d.token("bob")
        async with (
            client(d.base, d.owner) as c,
            client(d.base, bob) as b,
            c.listen(resources_list_changed=True, resource_subscriptions=[handbook, "toolcrib://x/y"]) as sub,
            b.listen(resources_list_changed=True, resource_subscriptions=[handbook]) as blocked,
        ):
            assert sub.honored.resource_subscriptions == [handbook]  # the unknown URI is not honored
            assert not blocked.honored.resource_subscriptions
            for tool in ("desk__grow_resources", "desk__touch_handbook"):
                done = await c.call_tool("execute_tool", {"tool": tool, "arguments": {}})
                assert not done.is_error, done
            seen: list[Any] = []
            with anyio.fail_after(20):
                async for event in sub:
                    seen.append(event)
                    if {type(e) for e in seen} >= {ResourcesListChanged, ResourceUpdated}:
                        break
    assert ResourceUpdated(uri=handbook) in seen


async def test_r16_2_a_read_whose_names_cannot_be_listed_is_refused_not_let_through(tmp_path: Path) -> None:
    """The resolver decides a resource by its listed name: when the listing fails, the read fails
    too, rather than being decided by its URI (which a name pattern would not match)."""
    async with desks(tmp_path, env={"FIXTURE_FAIL_RESOURCE_LIST": "1"}) as d:
        alice = await d.token("alice")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="alice", tool="secret_*", actor=OPERATOR
        )
        async with client(d.base, alice) as c:
            assert await _all_resources(c) == []  # the connection is left out of the listing
            with pytest.raises(MCPError) as refused:
                await c.read_resource("toolcrib://desk/docs://secret-plan")
        rows = [r for r in await _rows(d.gw) if r.kind == "resource"]
    assert refused.value.data["code"] == "upstream_error"
    assert "ship on Friday" not in str(refused.value.data)
    assert rows == []


async def test_r16_2_a_resource_added_since_the_kept_listing_is_decided_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upstream that does not announce its changes: the kept listing lacks the new resource,
    whose name is withheld; reading it by URI looks it up in a fresh listing first."""
    from toolcrib.gateway.resources import reading
    from toolcrib.upstream.session import UpstreamSession

    monkeypatch.setattr(reading, "FRESH_SECONDS", 0.0)  # "older than the bound": no wait in a test
    monkeypatch.setattr(UpstreamSession, "_offerings_changed", lambda self, kind: None)  # announces nothing
    async with desks(tmp_path) as d:
        alice = await d.token("alice")
        await restrictions.add_restriction(
            d.gw.store, effect="block", target_kind="user", target="alice", tool="added", actor=OPERATOR
        )
        async with client(d.base, alice) as c, client(d.base, d.owner) as owner:
            await _all_resources(c)  # the listing is kept now, without docs://added
            grown = await owner.call_tool("execute_tool", {"tool": "desk__grow_resources", "arguments": {}})
            assert not grown.is_error, grown
            with pytest.raises(MCPError) as withheld:
                await c.read_resource("toolcrib://desk/docs://added")
    assert withheld.value.data["code"] == "not_found"
