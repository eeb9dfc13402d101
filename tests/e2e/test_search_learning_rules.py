"""What search learns, and when it forgets (R-5.12, #23): a real gateway, the fixture upstream, the
packaged model, a SQLite file (the store's own rules run on PostgreSQL too, in
``tests/store/test_learning_store.py``).

Recorded: only a successful call through a handle that a search issued (not by name, not a call
refused before the upstream, not one that failed there); the text only under ``text``, never under
``vectors`` (the SQLite file's bytes are read); nothing under ``off``. Dropped: when the tool's
definition changes, when an admin accepts the change, with the connection, and by an admin on
every face (CLI, MCP, REST, console), each an audited act.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from tests.admin.console import console
from tests.conftest import PYTHON, Process, cli, cli_json
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, gateway_payload
from tests.principals import OPERATOR
from tests.web.asgi import asgi_client, bearer
from toolcrib.errors import InBandError, PermissionRequired
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections import pins
from toolcrib.gateway.connections.manage import add_connection, refresh_connection, remove_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery import learning
from toolcrib.gateway.discovery.search import search_tools
from toolcrib.gateway.identity import members
from toolcrib.policy.gates import Principal
from toolcrib.store import learning as store
from toolcrib.store.tables import audit, handles, searches

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

ECHO = "desk__echo_message"
MIRROR = "mirror my text quokka"  # finds ECHO among its cards; a word no tool has, to find in a file
SLOW = "desk__slow_operation"
FIXTURE = [PYTHON, "-m", "tests.fixtures.fixture_server"]
SYNC: dict[str, Any] = {
    "name": "sync_contacts",
    "description": "Sync the contacts of a mailing list.",
    "inputSchema": {"type": "object", "properties": {"list_id": {"type": "string"}}, "required": ["list_id"]},
}
SYNC_TOOL = "crm__sync_contacts"


@asynccontextmanager
async def _gateway(tmp_path: Path, fixture_url: str, **settings: Any) -> AsyncIterator[Gateway]:
    values = {"connect_timeout_seconds": 5, "upstream_timeout_seconds": 2, **settings}
    async with open_gateway(settings_for(tmp_path, **values)) as gw:
        await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", url=fixture_url, actor=OPERATOR)
        assert row.status == "active", row.reason
        yield gw


async def _member(gw: Gateway, name: str) -> tuple[Principal, str]:
    await members.add_member(gw.store, name, "member", actor=OPERATOR)
    _, token = await members.create_token(gw.store, name, "mcp:tools mcp:read mcp:write", actor=OPERATOR)
    return await gw.bearers.authenticate(token), token


async def _handle(gw: Gateway, who: Principal, query: str, tool: str) -> str:
    found = await search_tools(gw, who, query, 5)
    return str(next(c["action_id"] for c in found["results"] if c["name"] == tool))


async def _learn(gw: Gateway, who: Principal, query: str, tool: str, **arguments: Any) -> None:
    """``who`` searches ``query`` and runs ``tool`` through its handle, successfully."""
    result = await execute_tool(gw, who, action_id=await _handle(gw, who, query, tool), arguments=arguments)
    assert not result.get("isError"), result
    await _settled(gw)


async def _settled(gw: Gateway) -> None:
    """Wait (bounded) for the recordings running beside the answers of the calls made so far."""
    with anyio.fail_after(15):
        while gw.learned.recording:  # noqa: ASYNC110 - a count, not an event; bounded above
            await anyio.sleep(0.02)


async def _stored(gw: Gateway) -> dict[str, int]:
    return {c.public_name: c.examples for c in await store.count_examples(gw.store.db)}


async def _rows(gw: Gateway, table: Any) -> list[Any]:
    async with gw.store.db.read() as conn:
        return list((await conn.execute(select(table))).all())


def _file_bytes(gw: Gateway) -> bytes:
    path = gw.settings.sqlite_path()
    assert path is not None
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))  # the file, -wal, -shm


async def test_r5_12_only_a_successful_call_through_a_handle_becomes_an_example(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with _gateway(tmp_path, fixture_http.url) as gw:
        ada, _ = await _member(gw, "ada")
        await execute_tool(gw, ada, tool=ECHO, arguments={"message": "by name"})  # by name: nothing
        with pytest.raises(InBandError):  # refused before the upstream (no `message`): nothing
            await execute_tool(gw, ada, action_id=await _handle(gw, ada, MIRROR, ECHO), arguments={})
        slow = await _handle(gw, ada, "wait a number of seconds", SLOW)
        with pytest.raises(InBandError) as timed_out:  # failed at the upstream: nothing
            await execute_tool(gw, ada, action_id=slow, arguments={"seconds": 5})
        assert timed_out.value.code == "upstream_timeout"
        await _settled(gw)
        assert await _stored(gw) == {}
        assert gw.index.examples == 0

        handle = await _handle(gw, ada, MIRROR, ECHO)
        await execute_tool(gw, ada, action_id=handle, arguments={"message": "hi"})
        await _settled(gw)
        assert gw.index.examples == 1
        [first] = await _rows(gw, store.search_examples)
        await execute_tool(gw, ada, action_id=handle, arguments={"message": "again"})
        await _learn(gw, ada, MIRROR, ECHO, message="a third time")  # the same text: refreshed
        [refreshed] = await _rows(gw, store.search_examples)
        assert refreshed.id == first.id
        assert refreshed.created_at >= first.created_at
        assert await _stored(gw) == {ECHO: 1}

        assert all(r.text is None for r in await _rows(gw, searches))  # `vectors`: never the text
        assert all(r.search_id is not None for r in await _rows(gw, handles))
        assert b"quokka" not in _file_bytes(gw)


async def test_r5_12_the_text_is_kept_only_under_the_text_setting(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with _gateway(tmp_path, fixture_http.url, search_learning="text") as gw:
        ada, _ = await _member(gw, "ada")
        await _learn(gw, ada, MIRROR, ECHO, message="hi")
        [example] = await _rows(gw, store.search_examples)
        assert example.text == MIRROR
        assert {r.text for r in await _rows(gw, searches)} == {MIRROR}
        assert b"quokka" in _file_bytes(gw)


async def test_r5_12_off_records_nothing(tmp_path: Path, fixture_http: Process) -> None:
    async with _gateway(tmp_path, fixture_http.url, search_learning="off") as gw:
        ada, _ = await _member(gw, "ada")
        await _learn(gw, ada, MIRROR, ECHO, message="hi")
        assert await _rows(gw, searches) == []
        assert all(r.search_id is None for r in await _rows(gw, handles))
        assert await _stored(gw) == {}
        assert gw.index.examples == 0


async def test_r5_12_another_process_on_the_sqlite_file_learns_by_its_poll(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with (
        _gateway(tmp_path, fixture_http.url) as gw,
        open_gateway(settings_for(tmp_path, catalog_poll_seconds=0.05)) as other,
    ):
        ada, _ = await _member(gw, "ada")
        await _learn(gw, ada, MIRROR, ECHO, message="hi")
        with anyio.fail_after(15):  # the other's follower reads the examples on its timer
            while other.index.examples != 1:  # noqa: ASYNC110 - no event to wait on, bounded above
                await anyio.sleep(0.05)
        await learning.forget_examples(gw, OPERATOR, None)
        with anyio.fail_after(15):
            while other.index.examples != 0:  # noqa: ASYNC110 - no event to wait on, bounded above
                await anyio.sleep(0.05)


async def test_r5_12_examples_go_with_a_changed_definition_an_accepted_change_and_the_connection(
    tmp_path: Path, fixture_http: Process
) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"tools": [SYNC]}))
    async with _gateway(tmp_path, fixture_http.url) as gw:
        ada, _ = await _member(gw, "ada")
        await _learn(gw, ada, MIRROR, ECHO, message="hi")
        env = {"FIXTURE_STATE_FILE": str(state)}
        row = await add_connection(gw, "crm", connector="CRM", command=FIXTURE, env=env, actor=OPERATOR)
        assert row.status == "active", row.reason
        await _learn(gw, ada, "sync the contacts of a mailing list", SYNC_TOOL, list_id="l1")
        assert await _stored(gw) == {SYNC_TOOL: 1, ECHO: 1}
        assert gw.index.examples == 2

        state.write_text(json.dumps({"tools": [{**SYNC, "description": "Export every report elsewhere."}]}))
        await refresh_connection(gw, "crm", OPERATOR)  # held, and what was learned goes
        assert await _stored(gw) == {ECHO: 1}
        assert gw.index.examples == 1

        # An example of the held tool (recorded just before the sync, say) goes when it is accepted.
        sid = "srch_" + "0" * 32
        vector = bytes(384 * 4)
        async with gw.store.db.begin() as conn:
            await store.insert_search(
                conn, store.SearchRow(sid, "ada", vector, "1" * 64, None, gw.store.clock())
            )
        await store.record_example(
            gw.store.db,
            search_id=sid,
            account="crm",
            tool="sync_contacts",
            public_name=SYNC_TOOL,
            member="ada",
            now=gw.store.clock(),
            per_tool=64,
            per_member=16,
        )
        await gw.learned.reload()
        assert gw.index.examples == 2
        await pins.accept_change(gw, OPERATOR, "crm", "sync_contacts")
        assert await _stored(gw) == {ECHO: 1}
        assert gw.index.examples == 1

        await remove_connection(gw, "desk", OPERATOR)
        assert await _stored(gw) == {}
        assert gw.index.examples == 0


async def test_r5_12_admins_read_and_forget_examples_on_every_face(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with _gateway(tmp_path, fixture_http.url) as gw:
        _, owner = await members.create_token(
            gw.store, "owner", "mcp:tools mcp:read mcp:write mcp:destructive", actor=OPERATOR
        )
        ada, ada_token = await _member(gw, "ada")
        bo, _ = await _member(gw, "bo")

        async def teach() -> None:
            await _learn(gw, ada, MIRROR, ECHO, message="hi")
            await _learn(gw, bo, "add two numbers", "desk__add_numbers", a=1, b=2)
            assert await _stored(gw) == {ECHO: 1, "desk__add_numbers": 1}
            assert gw.index.examples == 2

        # MCP: the control-plane tools, for an admin only
        await teach()
        async with serve(gw) as base:
            async with connect(base, owner) as client:
                listed = gateway_payload(await client.call_tool("toolcrib__search__examples", {}))["result"]
                assert {r["tool"]: (r["examples"], r["members"]) for r in listed} == {
                    ECHO: (1, 1),
                    "desk__add_numbers": (1, 1),
                }
                assert all(set(r) == {"tool", "examples", "members", "newest"} for r in listed)
                forgot = await client.call_tool("toolcrib__search__forget", {"tool": ECHO})
                assert gateway_payload(forgot)["result"] == {"tool": ECHO, "forgotten": 1}
            async with connect(base, ada_token) as client:
                refused = await client.call_tool("toolcrib__search__forget", {})
                assert refused.is_error
        assert await _stored(gw) == {"desk__add_numbers": 1}
        assert gw.index.examples == 1

        # REST
        async with asgi_client(gw) as http:
            denied = await http.post("/api/search/forget", json={}, headers=bearer(ada_token))
            assert denied.status_code == 403
            assert denied.json()["error"]["code"] == "permission_required"
            shown = await http.post("/api/search/examples", json={}, headers=bearer(owner))
            assert [r["tool"] for r in shown.json()["result"]] == ["desk__add_numbers"]
            done = await http.post("/api/search/forget", json={}, headers=bearer(owner))
            assert done.status_code == 200
            assert done.json()["result"] == {"tool": None, "forgotten": 1}
        assert await _stored(gw) == {}
        assert gw.index.examples == 0

        # the console: the page lists them, its button forgets (CSRF-checked)
        await teach()
        async with console(gw) as c:
            http, csrf = await c.signed_in(owner)
            page = await http.get("/admin/learned")
            assert page.status_code == 200
            assert ECHO in page.text
            assert "quokka" not in page.text
            forged = await http.post("/admin/learned/forget", data={"tool": ECHO, "csrf": "nope"})
            assert forged.status_code == 403
            assert await _stored(gw) == {ECHO: 1, "desk__add_numbers": 1}
            posted = await http.post("/admin/learned/forget", data={"tool": ECHO, "csrf": csrf})
            assert posted.status_code == 303
            assert await _stored(gw) == {"desk__add_numbers": 1}
            assert gw.index.examples == 1
            member_http, _ = await c.signed_in(ada_token)
            assert (await member_http.get("/admin/learned")).status_code == 403

        # the command line (another process): this gateway's index learns it by its poll
        db_url = gw.settings.database_url
        assert [r["tool"] for r in cli_json(db_url, "search", "examples")] == ["desk__add_numbers"]  # type: ignore[index]
        out = cli(db_url, "search", "forget", "--tool", "desk__add_numbers", "--json")
        assert json.loads(out.stdout) == {"tool": "desk__add_numbers", "forgotten": 1}
        assert await _stored(gw) == {}
        with anyio.fail_after(10):  # this gateway's follower reads it on its timer
            while gw.index.examples != 0:  # noqa: ASYNC110 - no event to wait on, bounded above
                await anyio.sleep(0.05)
        assert cli_json(db_url, "search", "examples") == []

        with pytest.raises(PermissionRequired):
            await learning.forget_examples(gw, ada, None)
        acts = [
            r
            for r in await _rows(gw, audit)
            if r.kind == "admin" and r.operation == "toolcrib__search__forget"
        ]
        assert [(r.member, r.target_id) for r in acts] == [
            ("owner", ECHO),
            ("owner", None),
            ("owner", ECHO),
            ("owner", "desk__add_numbers"),
        ]
