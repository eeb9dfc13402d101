"""Runtime hardening end to end (issue #10): ``/metrics``, request-body bounds, protocol faults.

One real gateway for the module, served over real HTTP (uvicorn on loopback) with Streamable HTTP
sessions on (``stateless = false``) and a 64 KiB body bound, in front of the real fixture MCP
server over Streamable HTTP. SPEC R-2.1, R-2.4, R-3.3, R-14.1.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Process
from tests.e2e.mcpclient import connect, error_code, payload
from tests.e2e.org import ALL_SCOPES, PREFIX, Org, organization
from toolcrib.gateway.calls.results import is_protocol_meta_key
from toolcrib.gateway.control import ControlPlane
from toolcrib.web.telemetry import OUTCOMES, UNKNOWN

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

LIMIT = 65_536
CAP = 64 * 1024 * 1024
"""A client stops streaming here: a server still reading by then reads without bound."""
SENT_BOUND = 32 * 1024 * 1024
"""Body bytes a client may get into the socket before the answer: the bound, one chunk, and the
loopback's socket buffers (a few MiB), with room to spare."""
HANDSHAKE = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def org(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Org]:
    tmp: Path = tmp_path_factory.mktemp("hardening")
    async with organization(tmp, fixture_http, stateless=False, max_body_bytes=LIMIT) as served:
        yield served


# --- R-14.1 /metrics: who may read it -----------------------------------------------------------


async def test_r14_1_metrics_need_a_grant_whose_role_reads_usage_or_audit(org: Org) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:

        async def scrape(token: str | None) -> httpx2.Response:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return await http.get(org.base + "/metrics", headers=headers)

        anonymous = await scrape(None)
        assert anonymous.status_code == 401
        assert "resource_metadata=" in anonymous.headers["WWW-Authenticate"]
        assert (await scrape("tcp_not-a-real-token")).status_code == 401
        member = await scrape(await org.token("mia", "member"))
        assert member.status_code == 403
        assert member.json()["error"]["code"] == "permission_required"
        guest = await scrape(await org.token("gil", "guest"))
        assert guest.json()["error"]["code"] == "permission_required"
        no_read = await scrape(await org.token("aud-nr", "auditor", "mcp:tools"))
        assert no_read.status_code == 403
        assert (no_read.json()["error"]["code"], no_read.json()["error"]["scope"]) == (
            "scope_required",
            "mcp:read",
        )
        assert 'error="insufficient_scope"' in no_read.headers["WWW-Authenticate"]
        for token in (
            org.owner,
            await org.token("adm", "admin"),
            await org.token("aud", "auditor", "mcp:read"),
            await org.token("bil", "billing_admin", "mcp:read"),
        ):
            answer = await scrape(token)
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/plain")


# --- R-14.1 /metrics: closed label sets ---------------------------------------------------------

JUNK_CALLS = 3_000


def _junk_name(i: int) -> str:
    """Names a caller may invent; several begin like the gateway's own tools."""
    return ("junk_{}", "execute_tool_{}", "run_{}", "search_tools{}", PREFIX + "x__{}", "discover{}")[
        i % 6
    ].format(i)


async def test_r14_1_three_thousand_junk_calls_do_not_grow_metrics_and_no_label_names_a_member(
    org: Org,
) -> None:
    reader = await org.token("metrics-reader", "auditor", "mcp:read")
    caller = await org.token("zed-secret-member-name", "member", ALL_SCOPES)
    async with connect(org.base, caller) as client:  # every label the real traffic can make, first
        assert payload(
            await client.call_tool(
                "execute_tool", {"tool": "desk__add_numbers", "arguments": {"a": 1, "b": 2}}
            )
        )
        assert error_code(await client.call_tool("execute_tool", {"tool": "desk__nope"})) == "not_found"
        assert error_code(await client.call_tool("no_such_tool", {})) == "not_found"
        await client.call_tool("search_tools", {"query": "add two numbers"})
        await client.call_tool(PREFIX + "connections__list", {})
    before = await _scrape(org.base, reader)

    async def junk(worker: int) -> None:
        async with connect(org.base, caller) as client:
            for i in range(worker, JUNK_CALLS, 4):
                result = await client.call_tool(_junk_name(i), {"tool": _junk_name(i)})
                assert error_code(result) == "not_found"

    with anyio.fail_after(600):
        async with anyio.create_task_group() as tg:
            for worker in range(4):
                tg.start_soon(junk, worker)
    after = await _scrape(org.base, reader)
    print(f"\n/metrics: {len(before)} bytes before, {len(after)} bytes after {JUNK_CALLS} junk calls")
    assert len(after) < 2 * len(before)
    assert "zed-secret-member-name" not in after
    assert "member=" not in after
    labels = _labels(after)
    operations = {name for name, _ in ControlPlane(org.gw).all_operations()}
    assert labels["tool"] <= {"search_tools", "execute_tool", UNKNOWN} | operations
    assert UNKNOWN in labels["tool"]
    assert not any(name.startswith(("junk_", "execute_tool_", "run_", "discover")) for name in labels["tool"])
    assert labels["outcome"] <= OUTCOMES
    assert labels["role"] <= {"owner", "admin", "member", "guest", "auditor", "billing_admin", UNKNOWN}
    samples = _samples(after)
    assert samples[("toolcrib_tool_calls_total", (("outcome", "not_found"), ("tool", UNKNOWN)))] >= JUNK_CALLS


async def _scrape(base: str, token: str) -> str:
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    return answer.text


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _labels(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"tool": set(), "outcome": set(), "role": set()}
    for name, labels in _samples(text):
        for key, value in labels:
            if key in out:
                out[key].add(value)
        assert name.startswith(("toolcrib_", "python_", "process_")), name
    return out


# --- request bodies are bounded on every route ---------------------------------------------


def _port(base: str) -> int:
    return int(urlsplit(base).port or 80)


def _stream_chunked(port: int, head: bytes, cap: int) -> tuple[bytes, int, bool]:
    """Send ``head``, then a never-ending chunked body, until the server answers or ``cap`` bytes.

    Returns the answer's bytes, the body bytes sent, and whether the server then closed the
    connection. Runs in a worker thread: the gateway serves on the test's own event loop.
    """
    chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        while sent < cap:
            readable, writable, _ = select.select([sock], [sock], [], 30)
            if readable:
                break
            if writable:
                try:
                    sent += sock.send(chunk)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break  # the server closed on us; its answer is read below
        else:
            return b"", sent, False
        sock.setblocking(True)
        sock.settimeout(30)
        return _read_to_close(sock, sent)


def _read_to_close(sock: socket.socket, sent: int) -> tuple[bytes, int, bool]:
    answer = b""
    try:
        while data := sock.recv(65_536):
            answer += data
    except TimeoutError:
        return answer, sent, False
    except ConnectionResetError:
        pass
    return answer, sent, True


def _head(path: str, token: str | None, extra: str = "") -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nMCP-Protocol-Version: {HANDSHAKE}\r\n{auth}{extra}"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("path", ["/api/members/list", "/mcp"])
async def test_r2_4_an_endless_chunked_body_is_refused_413_and_the_connection_closed(
    org: Org, path: str
) -> None:
    answer, sent, closed = await anyio.to_thread.run_sync(
        _stream_chunked, _port(org.base), _head(path, org.owner), CAP
    )
    print(f"\n{path}: answered after {sent} body bytes sent (bound {LIMIT})")
    assert sent < SENT_BOUND, "the server read on and on without answering"
    status, body = _status_and_body(answer)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "too_large"
    assert closed


async def test_r2_4_a_request_answered_before_its_body_is_read_closes_the_connection(org: Org) -> None:
    head = _head("/api/members/list", None)
    answer, sent, closed = await anyio.to_thread.run_sync(_stream_chunked, _port(org.base), head, CAP)
    assert sent < SENT_BOUND
    assert _status_and_body(answer)[0] == 401
    assert closed


@pytest.mark.parametrize(
    "path", ["/api/members/list", "/mcp", "/metrics", "/healthz", "/api/openapi.json", "/nowhere"]
)
async def test_r2_4_a_declared_length_over_the_bound_is_refused_before_any_body_byte(
    org: Org, path: str
) -> None:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {org.owner}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {300 * 1024 * 1024}\r\n\r\n"
    ).encode()

    def ask() -> tuple[bytes, int, bool]:
        with socket.create_connection(("127.0.0.1", _port(org.base)), timeout=30) as sock:
            sock.sendall(head)
            return _read_to_close(sock, 0)

    answer, _, closed = await anyio.to_thread.run_sync(ask)
    status, body = _status_and_body(answer)
    assert (status, json.loads(body)["error"]["code"], closed) == (413, "too_large", True)


async def test_r2_4_bodies_within_the_bound_still_work(org: Org) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        headers = {"Authorization": f"Bearer {org.owner}"}
        padded = {"pad": "x" * (LIMIT - 100)}
        answer = await http.post(org.base + "/api/connections/list", json=padded, headers=headers)
    assert answer.status_code == 200, answer.text
    assert [c["name"] for c in answer.json()["result"]] == ["desk"]


def _status_and_body(answer: bytes) -> tuple[int, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head else 0
    return status, body


# --- the protocol's own _meta keys are not passed on ---------------------------------------


async def test_r3_3_upstream_meta_of_the_protocol_namespace_is_not_passed_on_other_keys_are(
    org: Org,
) -> None:
    async with connect(org.base, org.owner) as client:
        result = await client.call_tool("execute_tool", {"tool": "desk__stamp_meta"})
    assert not result.is_error, result
    raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    meta = raw.get("_meta", {})
    assert meta.get("fixture.example/custom") == {"kept": True}
    assert (meta.get("com.example.mcp/kept"), meta.get("plain")) == ("yes", 1)
    assert "modelcontextprotocol.io/related-task" not in meta
    server_info = meta.get("io.modelcontextprotocol/serverInfo")
    assert server_info is None or server_info.get("name") == "toolcrib", server_info  # never the upstream's
    assert "toolcrib-fixture" not in json.dumps(raw)
    assert raw["content"][0]["_meta"] == {"fixture/block": 1}
    assert raw["structuredContent"] == {"stamped": True}


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("io.modelcontextprotocol/serverInfo", True),
        ("modelcontextprotocol.io/related-task", True),
        ("dev.mcp/trace", True),
        ("org.modelcontextprotocol.api/x", True),
        ("tools.mcp.com/x", True),
        ("IO.ModelContextProtocol/serverInfo", True),
        ("com.example.mcp/kept", False),
        ("fixture.example/custom", False),
        ("mcp", False),
        ("plain", False),
        ("/leading", False),
    ],
)
def test_r3_3_which_meta_keys_are_the_protocols_own(key: str, reserved: bool) -> None:
    assert is_protocol_meta_key(key) is reserved


# --- a stateful session belongs to the member who opened it --------------------------------


async def test_r2_1_another_members_token_cannot_use_or_end_a_session(org: Org) -> None:
    alice = await org.token("alice-s", "member")
    bob = await org.token("bob-s", "member")
    async with httpx2.AsyncClient(base_url=org.base, timeout=30) as http:
        session = await _open_session(http, alice)

        async def send(token: str, method: str, body: dict[str, Any] | None = None) -> httpx2.Response:
            headers = {
                "Authorization": f"Bearer {token}",
                "Accept": ACCEPT,
                "MCP-Protocol-Version": HANDSHAKE,
                "mcp-session-id": session,
            }
            if method == "GET":
                async with http.stream("GET", "/mcp", headers=headers) as answer:
                    return answer
            return await http.request(method, "/mcp", json=body, headers=headers)

        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        assert (await send(bob, "POST", listing)).status_code == 404
        assert (await send(bob, "GET")).status_code == 404
        assert (await send(bob, "DELETE")).status_code == 404
        answer = await send(alice, "POST", listing)
        assert answer.status_code == 200
        assert "search_tools" in answer.text
        assert (await send(alice, "DELETE")).status_code in (200, 204)
        assert (await send(alice, "POST", listing)).status_code == 404


async def _open_session(http: httpx2.AsyncClient, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    opened = await http.post("/mcp", json=init, headers=headers)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    headers |= {"mcp-session-id": session, "MCP-Protocol-Version": HANDSHAKE}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post("/mcp", json=note, headers=headers)).status_code == 202
    return session
