"""The audit trail, stored results, redaction and telemetry end to end (issue #6).

SPEC section 11 (audit), 12 (results), 14 (telemetry) and step 15/16 of section 6, over real HTTP
with the official SDK client, against real upstreams (the fixture server over stdio and over HTTP),
on a real SQLite file that the tests read back directly.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FIXTURE_SERVER, Process, cli, start_gateway
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, error_code, gateway_payload, payload
from tests.fixtures.fixture_server import JWT_SHAPED
from tests.principals import OPERATOR
from toolcrib.gateway.audit.entries import target_id
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.search import flat_listing_bytes
from toolcrib.gateway.governance.restrictions import add_restriction
from toolcrib.gateway.identity.members import add_member, create_token
from toolcrib.store.members import find_grant_by_token

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET = "vault-key-5f1c9a0e7b2d4e6a"
MEMBER_SCOPES = "mcp:tools,mcp:read,mcp:write"
READ_RESULT = "toolcrib__results__read"


# --- helpers ---------------------------------------------------------------------------------


def db_path(gw_or_url: Gateway | str) -> Path:
    url = gw_or_url if isinstance(gw_or_url, str) else gw_or_url.settings.database_url
    return Path(url.removeprefix("sqlite:///"))


def audit_rows(path: Path) -> list[dict[str, Any]]:
    """The audit table as it is in the file, read by another connection (oldest first)."""
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM audit ORDER BY id")]


def result_rows(path: Path) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(path, timeout=10)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM results ORDER BY created_at")]


def file_bytes(path: Path) -> bytes:
    """The database file and its write-ahead log: everything the gateway wrote to disk."""
    return b"".join(p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists())


async def member_token(gw: Gateway, name: str, role: str = "member", scopes: str = MEMBER_SCOPES) -> str:
    await add_member(gw.store, name, role, actor=OPERATOR)
    _, token = await create_token(gw.store, name, scopes, actor=OPERATOR)
    return token


async def execute(client: Any, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    return await client.call_tool("execute_tool", {"tool": tool, "arguments": arguments or {}})


def result_id_of(result: Any) -> str:
    """The ``toolcrib_result_id`` a cut result names, in its text blocks (and structured content)."""
    ids = [
        block.text.split(": ", 1)[1]
        for block in result.content
        if block.text.startswith("toolcrib_result_id: ")
    ]
    assert len(ids) == 1, result.content
    if isinstance(result.structured_content, dict):
        assert result.structured_content["toolcrib_result_id"] == ids[0]
    return ids[0]


async def read_all_pages(client: Any, result_id: str, length: int = 32_000) -> tuple[str, int]:
    """Every page of a stored result, until ``next_offset`` is null; the text and the page count."""
    chunks: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        answer = await client.call_tool(
            READ_RESULT, {"result_id": result_id, "offset": offset, "length": length}
        )
        assert not answer.is_error, answer
        page = gateway_payload(answer)["result"]
        assert page["offset"] == offset
        assert page["length"] == len(page["data"]) <= length
        chunks.append(page["data"])
        offset = page["next_offset"]
        pages += 1
        assert pages <= 1_000
    text = "".join(chunks)
    assert len(text) == page["total"]
    return text, pages


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


# --- under load -----------------------------------------------------------------------

CLIENTS, CALLS_EACH, REFUSED_EACH = 50, 20, 4


async def _prepare_load(tmp_path: Path, fixture_url: str) -> tuple[list[str], str]:
    """Two accounts of the fixture (stdio and HTTP), a block rule for members, 50 member tokens,
    and the owner's token (it reads /metrics)."""
    async with open_gateway(settings_for(tmp_path)) as gw:
        owner = await owner_token(gw)
        await add_connection(gw, "desk-a", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        await add_connection(gw, "desk-b", connector="Helpdesk", url=fixture_url, actor=OPERATOR)
        await add_restriction(
            gw.store,
            effect="block",
            target_kind="role",
            target="member",
            tool="reveal_config",
            actor=OPERATOR,
        )
        return [await member_token(gw, f"load-{i:02d}") for i in range(CLIENTS)], owner


async def _refused_call(client: Any, account: str, kind: int) -> Any:
    """A call stopped before step 14, one kind per gate."""
    if kind == 0:  # step 9: an argument name the tool does not have
        return await execute(client, f"{account}__add_numbers", {"a": 1, "b": 2, "c": 3})
    if kind == 1:  # step 7: a block rule for the member role
        return await execute(client, f"{account}__reveal_config")
    if kind == 2:  # step 8: destructive, and the grant lacks mcp:destructive
        return await execute(client, f"{account}__delete_ticket", {"ticket_id": "T-1"})
    return await execute(client, f"{account}__echo_message", {})  # step 11: needs_input


async def test_r11_1_fifty_clients_thousand_calls_write_exactly_thousand_rows_and_refusals_none(
    tmp_path: Path, fixture_http: Process
) -> None:
    tokens, owner = await _prepare_load(tmp_path, fixture_http.url)
    db_url = settings_for(tmp_path).database_url
    sums: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    every = CALLS_EACH // REFUSED_EACH

    async def one_client(i: int, base: str) -> None:
        async with connect(base, tokens[i]) as client:
            for n in range(CALLS_EACH):
                account = ("desk-a", "desk-b")[(i + n) % 2]
                answer = await execute(client, f"{account}__add_numbers", {"a": i, "b": n})
                assert payload(answer) == {"sum": float(i + n)}, answer
                sums[account] += 1
                if n % every == 0:
                    refusals[error_code(await _refused_call(client, account, n // every))] += 1

    gateway = start_gateway(db_url)
    try:
        started = time.perf_counter()
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                for i in range(CLIENTS):
                    tg.start_soon(one_client, i, gateway.url)
        elapsed = time.perf_counter() - started
        metrics = _metrics(gateway.url, owner)
    finally:
        gateway.stop()
    rows = audit_rows(db_path(db_url))
    refused = sum(refusals.values())
    print(f"\nload: {CLIENTS} clients, {len(rows)} audit rows, {refused} refused, {elapsed:.1f} s")
    assert refusals == {"invalid_arguments": 50, "restricted": 50, "scope_required": 50, "needs_input": 50}
    assert len(rows) == CLIENTS * CALLS_EACH == metrics[("toolcrib_audit_rows_written", ())]
    assert Counter(r["account"] for r in rows) == sums == {"desk-a": 500, "desk-b": 500}
    assert {r["outcome"] for r in rows} == {"ok"}
    assert {r["operation"] for r in rows} == {"desk-a__add_numbers", "desk-b__add_numbers"}
    assert Counter(r["member"] for r in rows) == {f"load-{i:02d}": CALLS_EACH for i in range(CLIENTS)}
    assert all(r["error_code"] is None and r["duration_ms"] >= 0 for r in rows)


def _metrics(base: str, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx2.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert response.status_code == 200
    return _parse(response.text)


def _parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text: (sample name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


# --- a crash between the upstream call and the answer -----------------------------------


async def _wait_for_rows(path: Path, outcome: str) -> list[dict[str, Any]]:
    """Poll the database file until a row has ``outcome`` (bounded)."""
    with anyio.fail_after(30):
        while True:
            rows = [r for r in audit_rows(path) if r["outcome"] == outcome]
            if rows:
                return rows
            await anyio.sleep(0.05)


async def test_r11_1_gateway_killed_during_upstream_call_leaves_one_unknown_row_and_serves_again(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
    db_url = settings_for(tmp_path).database_url
    path = db_path(db_url)
    failures: list[BaseException] = []

    async def doomed_call(base: str) -> None:
        with anyio.move_on_after(30):
            try:
                async with connect(base, token) as client:
                    await execute(client, "desk__slow_operation", {"seconds": 30})
            except Exception as exc:  # the gateway died under the request: whatever the SDK raises
                failures.append(exc)

    gateway = start_gateway(db_url)
    try:
        async with connect(gateway.url, token) as client:
            for n in range(3):
                assert payload(await execute(client, "desk__add_numbers", {"a": n, "b": 1})) == {
                    "sum": n + 1.0
                }
        before = audit_rows(path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(doomed_call, gateway.url)
            pending = await _wait_for_rows(path, "pending")
            gateway.proc.send_signal(signal.SIGKILL)
            assert gateway.proc.wait(10) == -signal.SIGKILL
    finally:
        gateway.stop()
    assert len(failures) == 1  # the caller never got an answer
    assert [r["operation"] for r in pending] == ["desk__slow_operation"]
    assert [r["outcome"] for r in audit_rows(path)] == ["ok", "ok", "ok", "pending"]

    restarted = start_gateway(db_url)
    try:
        after = audit_rows(path)
        async with connect(restarted.url, token) as client:
            assert payload(await execute(client, "desk__add_numbers", {"a": 2, "b": 2})) == {"sum": 4.0}
    finally:
        restarted.stop()
    assert after[:3] == before
    assert [r["outcome"] for r in before] == ["ok"] * 3
    assert len(after) == 4
    unknown = after[3]
    assert unknown == {**pending[0], "outcome": "unknown"}
    assert unknown["error_code"] is None
    assert unknown["finished_at"] is None
    final = audit_rows(path)
    assert [r["outcome"] for r in final] == ["ok", "ok", "ok", "unknown", "ok"]
    assert final[:4] == after


# --- caps and stored results ---------------------------------------------------

_CAP = {"string": 32_000, "items": 200, "keys": 200, "depth": 8}


def _expected_full(kind: str) -> Any:
    """What the fixture's ``big_result`` sends, uncut."""
    if kind == "string":
        return {"text": "x" * 5_000_000}
    if kind == "array":
        return {"items": list(range(10_000))}
    if kind == "wide":
        return {f"k{i}": i for i in range(1_000)}
    if kind == "deep":
        value: Any = "bottom"
        for _ in range(50):
            value = {"next": value}
        return value
    return {"rows": [{"n": i} for i in range(5_000)]}


def _assert_within_caps(value: Any) -> None:
    assert depth(value) <= _CAP["depth"]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            assert len(item) <= _CAP["string"]
        elif isinstance(item, list):
            assert len(item) <= _CAP["items"]
            stack.extend(item)
        elif isinstance(item, dict):
            assert len([k for k in item if not k.startswith("toolcrib_")]) <= _CAP["keys"]
            stack.extend(item.values())


def _assert_cut(kind: str, answer: Any) -> None:
    """The visible result: within every cap, marked truncated, and cut where the kind is big."""
    assert not answer.is_error
    texts = [b.text for b in answer.content]
    assert any(t.startswith("toolcrib_truncated: true") for t in texts)
    first = json.loads(texts[0])
    for value in (first, answer.structured_content):
        if value is None:
            continue
        _assert_within_caps(value)
        assert value["toolcrib_truncated"] is True
    if kind == "json_text":
        assert answer.structured_content is None
        assert first["rows"] == [{"n": i} for i in range(200)]
        return
    structured = answer.structured_content
    if kind == "string":
        assert structured["text"] == "x" * 32_000
        assert len(first["text"]) == 32_000
    elif kind == "array":
        assert structured["items"] == list(range(200)) == first["items"]
    elif kind == "wide":
        assert [k for k in structured if not k.startswith("toolcrib_")] == [f"k{i}" for i in range(200)]
    else:
        assert depth(structured) == depth(first) == _CAP["depth"]


def _assert_full(kind: str, full: dict[str, Any]) -> None:
    expected = _expected_full(kind)
    assert json.loads(full["content"][0]["text"]) == expected
    if kind != "json_text":
        assert full["structuredContent"] == expected
    assert "toolcrib_truncated" not in full["content"][0]["text"]


async def test_r12_1_r12_3_big_results_are_capped_stored_and_paged_for_their_member_only(
    tmp_path: Path, fixture_http: Process
) -> None:
    now = [time.time()]
    async with open_gateway(settings_for(tmp_path), clock=lambda: now[0]) as gw:
        await owner_token(gw)
        await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        reader, other = await member_token(gw, "reader"), await member_token(gw, "other")
        stored: dict[str, str] = {}
        async with serve(gw) as base, connect(base, reader) as client, connect(base, other) as intruder:
            for kind in ("string", "array", "deep", "json_text", "wide"):
                answer = await execute(client, "desk__big_result", {"kind": kind})
                _assert_cut(kind, answer)
                stored[kind] = result_id_of(answer)
                text, pages = await read_all_pages(client, stored[kind])
                _assert_full(kind, json.loads(text))
                if kind == "string":
                    assert pages > 300  # 5 MB twice (text block and structured), 32,000 a page
                    ask = {"result_id": stored[kind], "offset": 64_000, "length": 1_000_000}
                    page = gateway_payload(await client.call_tool(READ_RESULT, ask))["result"]
                    assert page["data"] == text[64_000:96_000]  # never more than 32,000 a page
                denied = await intruder.call_tool(READ_RESULT, {"result_id": stored[kind]})
                assert error_code(denied) == "not_found"
            assert len(set(stored.values())) == 5
            assert len(result_rows(db_path(gw))) == 5

            await add_restriction(
                gw.store,
                effect="block",
                target_kind="role",
                target="member",
                tool="big_result",
                actor=OPERATOR,
            )
            now[0] += gw.settings.policy_cache_seconds + 1  # the policy cache time has passed
            for result_id in stored.values():
                refused = await client.call_tool(READ_RESULT, {"result_id": result_id})
                assert error_code(refused) == "restricted"
            assert (
                error_code(await intruder.call_tool(READ_RESULT, {"result_id": stored["wide"]}))
                == "not_found"
            )
            now[0] += gw.settings.result_ttl_seconds
            expired = await client.call_tool(READ_RESULT, {"result_id": stored["wide"]})
            assert error_code(expired) == "not_found"


# --- redaction, everywhere it could leak -------------------------------------------------

JWT_SIGNATURE = JWT_SHAPED.rsplit(".", 1)[1]


async def test_r12_2_upstream_secret_and_jwt_redacted_and_absent_from_log_audit_and_stored_results(
    tmp_path: Path,
) -> None:
    db_url = settings_for(tmp_path).database_url
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
    command = " ".join(FIXTURE_SERVER)
    added = cli(db_url, "connections", "add", "vault", "--connector", "Vault", "--command", command,
                "--env", f"FIXTURE_API_KEY={SECRET}", "--json")  # fmt: skip
    assert json.loads(added.stdout)["status"] == "active"
    assert SECRET not in added.stdout + added.stderr
    long_echo = f"key {SECRET} session {JWT_SHAPED} " + "." * 40_000
    gateway = start_gateway(db_url, {"TOOLCRIB_LOG_LEVEL": "DEBUG"})
    try:
        async with connect(gateway.url, token) as client:
            config = payload(await execute(client, "vault__reveal_config"))
            assert config == {"api_key": "[REDACTED]", "session": "[REDACTED]", "region": "eu-west-1"}
            echoed = await execute(client, "vault__echo_message", {"message": long_echo})
            visible = json.dumps([b.text for b in echoed.content]) + json.dumps(echoed.structured_content)
            assert "key [REDACTED] session [REDACTED] ..." in visible
            text, _ = await read_all_pages(client, result_id_of(echoed))
            assert json.loads(text)["structuredContent"]["received"]["message"].startswith(
                "key [REDACTED] session [REDACTED] ..."
            )
    finally:
        gateway.stop()
    path = db_path(db_url)
    log = path.with_suffix(".log").read_bytes()
    audit_dump = json.dumps(audit_rows(path))
    results_dump = json.dumps(result_rows(path))
    assert len(audit_rows(path)) == 2
    assert len(result_rows(path)) == 1
    assert "[REDACTED]" in results_dump
    for leak in (SECRET, JWT_SHAPED, JWT_SIGNATURE, token):  # nor the caller's bearer token
        assert leak.encode() not in log
        assert leak not in audit_dump
        assert leak not in results_dump
        assert leak.encode() not in file_bytes(path)


# --- what an entry holds --------------------------------------------------------------


async def test_r11_2_entry_holds_account_reached_target_id_classification_and_no_other_argument(
    tmp_path: Path, fixture_http: Process
) -> None:
    marker, email = "confidential-marker-7d3e91", "ann.marker@example.com"
    async with open_gateway(settings_for(tmp_path, upstream_timeout_seconds=2)) as gw:
        token = await owner_token(gw)
        await add_connection(gw, "desk-a", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        await add_connection(gw, "desk-b", connector="Desk HTTP", url=fixture_http.url, actor=OPERATOR)
        path = db_path(gw)
        async with serve(gw) as base, connect(base, token) as client:
            found = payload(
                await client.call_tool("search_tools", {"query": "delete a support ticket", "limit": 5})
            )
            card = next(c for c in found["results"] if c["name"] == "desk-b__delete_ticket")
            deleted = await client.call_tool(
                "execute_tool", {"action_id": card["action_id"], "arguments": {"ticket_id": "T-4242"}}
            )
            assert payload(deleted)["received"] == {"ticket_id": "T-4242"}
            closed = audit_rows(path)  # durable before the answer came back
            await execute(client, "desk-a__echo_message", {"message": marker, "count": 2})
            await execute(client, "desk-a__create_ticket", {"title": marker, "Customer Email": email})
            slow = await execute(client, "desk-b__slow_operation", {"seconds": 30})
            assert error_code(slow) == "upstream_timeout"
            crash = await execute(client, "desk-a__crash_server")
            assert error_code(crash) == "upstream_error"
        found_grant = await find_grant_by_token(gw.store.db, token)
        assert found_grant is not None
    rows = audit_rows(path)
    assert closed == rows[:1]
    delete, echo, create, timeout, crashed = rows
    expected = {
        "member": "owner", "grant_id": found_grant[0].id, "account": "desk-b", "connector": "Desk HTTP",
        "operation": "desk-b__delete_ticket", "classification": "destructive", "approved": 1,
        "outcome": "ok", "error_code": None, "target_id": "T-4242", "approved_by": None, "kind": "call",
    }  # fmt: skip
    assert {k: delete[k] for k in expected} == expected
    # nothing else; `instance` names the gateway process that made the call, not the caller's input
    assert set(delete) == {*expected, "id", "started_at", "finished_at", "duration_ms", "instance"}
    assert 0 < delete["duration_ms"] < 10_000
    assert delete["finished_at"] >= delete["started_at"]
    assert (echo["account"], echo["classification"], echo["target_id"]) == ("desk-a", "write", None)
    assert (create["operation"], create["target_id"]) == ("desk-a__create_ticket", None)
    assert (timeout["outcome"], timeout["error_code"]) == ("timeout", "upstream_timeout")
    assert 1_900 <= timeout["duration_ms"] < 10_000
    assert (crashed["outcome"], crashed["error_code"]) == ("error", "upstream_error")
    assert all(r["error_code"] is None for r in (delete, echo, create))
    disk = file_bytes(path)
    assert marker.encode() not in disk
    assert email.encode() not in disk
    assert b"T-4242" in disk


async def test_r11_2_start_finish_and_duration_come_from_the_gateway_clock(
    tmp_path: Path, fixture_http: Process
) -> None:
    frozen = 1_700_000_000.0
    async with open_gateway(settings_for(tmp_path), clock=lambda: frozen) as gw:
        token = await owner_token(gw)
        await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        async with serve(gw) as base, connect(base, token) as client:
            slow = await execute(client, "desk__slow_operation", {"seconds": 0.3})
            assert not slow.is_error
        [row] = audit_rows(db_path(gw))
    assert (row["started_at"], row["finished_at"], row["duration_ms"]) == (frozen, frozen, 0)


def test_r11_2_target_id_is_the_naming_argument_by_preference_cut_to_200() -> None:
    assert target_id({"name": "n", "path": "/p", "page_id": "p1", "id": 7, "body": "b"}) == "7"
    assert target_id({"name": "n", "path": "/p", "page_id": "p1"}) == "p1"
    assert target_id({"name": "n", "url": "https://x", "path": "/p"}) == "/p"
    assert target_id({"key": "k", "name": "n"}) == "k"
    assert target_id({"Name": "x" * 300}) == "x" * 200
    assert target_id({"message": "hello", "count": 2, "id": True}) is None


# --- searching and exporting -------------------------------------------------------------


async def test_r11_3_audit_search_by_account_outcome_member_since_export_and_over_mcp_with_audit_read(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        owner = await owner_token(gw)
        await add_connection(gw, "desk-a", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        await add_connection(gw, "desk-b", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        alice = await member_token(gw, "alice")
        ada = await member_token(gw, "ada", role="admin", scopes="mcp:read")
        audra = await member_token(gw, "audra", role="auditor", scopes="mcp:read")
        async with serve(gw) as base:
            async with connect(base, alice) as client:
                for account in ("desk-a", "desk-b", "desk-b"):
                    assert payload(await execute(client, f"{account}__add_numbers", {"a": 1, "b": 1}))
                names = [t.name for t in (await client.list_tools()).tools]
                assert "toolcrib__audit__search" not in names
                assert "execute_tool" in names
                refused = await client.call_tool("toolcrib__audit__search", {})
                assert error_code(refused) == "permission_required"
                assert payload(refused)["error"]["permission"] == "audit:read"
            async with connect(base, owner) as client:
                assert error_code(await execute(client, "desk-a__crash_server")) == "upstream_error"
                assert payload(await execute(client, "desk-b__delete_ticket", {"ticket_id": "T-9"}))
            async with connect(base, ada) as client:
                assert "toolcrib__audit__search" in [t.name for t in (await client.list_tools()).tools]
                answer = await client.call_tool("toolcrib__audit__search", {"account": "desk-b"})
                over_mcp = gateway_payload(answer)["result"]
            async with connect(base, audra) as client:
                # without tool:execute the whole MCP endpoint is closed, audit:read or not ...
                assert (await client.list_tools()).tools == []
                closed = await client.call_tool("toolcrib__audit__search", {"account": "desk-b"})
                assert error_code(closed) == "permission_required"
                assert payload(closed)["error"]["permission"] == "tool:execute"
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {audra}"}) as http:
                # ... and the auditor reads the trail over the REST face of the same operation.
                over_rest = (await http.post(base + "/api/audit/search", json={"account": "desk-b"})).json()
    db_url = gw.settings.database_url
    rows = audit_rows(db_path(db_url))
    assert len(rows) == 5
    mark = (rows[2]["started_at"] + rows[3]["started_at"]) / 2  # between alice's calls and the owner's
    since = datetime.fromtimestamp(mark).isoformat()
    queries = {
        "account": ("audit", "search", "--account", "desk-b", "--json"),
        "outcome": ("audit", "search", "--outcome", "error", "--json"),
        "member": ("audit", "search", "--member", "alice", "--json"),
        "since": ("audit", "search", "--since", since, "--json"),
        "export": ("audit", "export"),
    }
    with ThreadPoolExecutor(len(queries)) as pool:  # five real command lines, side by side
        done = {k: pool.submit(cli, db_url, *args) for k, args in queries.items()}
        out = {k: f.result().stdout for k, f in done.items()}
    ids = {k: [r["id"] for r in json.loads(v)] for k, v in out.items() if k != "export"}
    by = {r["id"]: r for r in rows}
    assert ids["account"] == [r["id"] for r in reversed(rows) if r["account"] == "desk-b"]  # newest first
    assert len(ids["account"]) == 3
    assert [by[i]["operation"] for i in ids["outcome"]] == ["desk-a__crash_server"]
    assert sorted(ids["member"]) == [r["id"] for r in rows[:3]]
    assert {by[i]["member"] for i in ids["member"]} == {"alice"}
    assert sorted(ids["since"]) == [r["id"] for r in rows[3:]]
    exported = [json.loads(line) for line in out["export"].splitlines()]
    assert [e["id"] for e in exported] == [r["id"] for r in rows]  # oldest first, every entry
    assert {(e["id"], e["outcome"], e["account"], e["target_id"]) for e in exported} == {
        (r["id"], r["outcome"], r["account"], r["target_id"]) for r in rows
    }
    assert [e["id"] for e in over_mcp] == [e["id"] for e in over_rest["result"]] == ids["account"]


# --- metrics ------------------------------------------------------------------------------


async def test_r14_1_metrics_count_requests_latency_searches_upstream_failures_audit_and_token_estimates(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with open_gateway(settings_for(tmp_path, upstream_timeout_seconds=2)) as gw:
        owner = await owner_token(gw)
        await add_connection(gw, "desk-a", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        await add_connection(gw, "desk-b", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        alice = await member_token(gw, "alice")
        async with serve(gw) as base:
            async with connect(base, alice) as client:
                listed = [await client.list_tools() for _ in range(2)]
                for query in ("add two numbers", "echo a message", "create a support ticket"):
                    found = payload(await client.call_tool("search_tools", {"query": query}))
                    assert found["results"]
                nothing = payload(await client.call_tool("search_tools", {"query": "zqxj vortigaunt"}))
                assert nothing["results"] == []
                for account in ("desk-a", "desk-b", "desk-a", "desk-b"):
                    assert payload(await execute(client, f"{account}__add_numbers", {"a": 1, "b": 2}))
                assert error_code(await execute(client, "desk-b__slow_operation", {"seconds": 30})) == (
                    "upstream_timeout"
                )
                assert error_code(await execute(client, "desk-a__crash_server")) == "upstream_error"
                assert error_code(await execute(client, "desk-a__add_numbers", {"a": "x", "b": 1})) == (
                    "invalid_arguments"
                )
            async with httpx2.AsyncClient() as http:
                response = await http.get(base + "/metrics", headers={"Authorization": f"Bearer {owner}"})
        alice_principal = await gw.bearers.authenticate(alice)
        flat_bytes = await flat_listing_bytes(gw, alice_principal)
        assert 0 < flat_bytes < gw.catalog.flat_listing_bytes()  # alice's grant has no mcp:destructive
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    m = _parse(response.text)
    calls = "toolcrib_tool_calls_total"
    assert m[(calls, (("outcome", "ok"), ("tool", "execute_tool")))] == 4
    assert m[(calls, (("outcome", "upstream_timeout"), ("tool", "execute_tool")))] == 1
    assert m[(calls, (("outcome", "upstream_error"), ("tool", "execute_tool")))] == 1
    assert m[(calls, (("outcome", "invalid_arguments"), ("tool", "execute_tool")))] == 1
    assert m[(calls, (("outcome", "ok"), ("tool", "search_tools")))] == 4
    assert m[("toolcrib_tool_call_seconds_count", (("tool", "execute_tool"),))] == 7
    assert m[("toolcrib_tool_call_seconds_sum", (("tool", "execute_tool"),))] >= 2  # the timeout's 2 s
    assert m[("toolcrib_tool_call_seconds_bucket", (("le", "+Inf"), ("tool", "execute_tool")))] == 7
    assert m[("toolcrib_searches_total", (("result", "non_empty"),))] == 3
    assert m[("toolcrib_searches_total", (("result", "empty"),))] == 1
    assert m[("toolcrib_upstream_failures_total", (("kind", "upstream_timeout"),))] == 1
    assert m[("toolcrib_upstream_failures_total", (("kind", "upstream_error"),))] == 1
    assert m[("toolcrib_audit_rows_written", ())] == 6
    # Per caller role, never per member name (#10): alice is the one caller of the role member.
    surface = m[("toolcrib_surface_estimated_tokens_total", (("role", "member"),))]
    flat = m[("toolcrib_flat_listing_estimated_tokens_total", (("role", "member"),))]
    # Each tools/list adds its own size to the surface and a flat listing's to the other counter
    # (the SDK client lists before its calls too, so count the listings from the flat figure).
    listings = flat / (flat_bytes / 4)
    assert listings == int(listings) >= len(listed)
    tools = [t.model_dump(mode="json", by_alias=True) for t in listed[0].tools]
    listing_tokens = len(json.dumps(tools, separators=(",", ":")).encode()) / 4
    assert listings * listing_tokens < surface < flat  # searches add to the surface alone
