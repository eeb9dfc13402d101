"""#24, R-14.2: traces reach an OTLP/HTTP collector and continue into the upstream servers.

Real parts: a receiver decoding ``ExportTraceServiceRequest`` (``tests/fixtures/otlp_receiver``),
the fixture MCP server over Streamable HTTP and over stdio recording the ``traceparent`` each call
arrives with (``FIXTURE_TRACE_LOG``), and ``toolcrib serve`` started with the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` naming the receiver and a short ``OTEL_BSP_SCHEDULE_DELAY``; every
wait on the receiver is bounded.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import FIXTURE_SERVER, Process, cli, cli_json, start_fixture_http, start_gateway
from tests.e2e.mcpclient import connect, payload
from tests.fixtures.otlp_receiver import OtlpReceiver, ReceivedSpan, running_receiver

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET_NUMBER = 73910264
QUERY_WORD = "quokkazebra"
API_KEY = "fixture-key-9f8e7d6c5b4a"


@dataclass
class Traced:
    gateway: Process
    token: str
    receiver: OtlpReceiver
    http_log: Path
    stdio_log: Path


def _otel(receiver: OtlpReceiver) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    tmp = tmp_path_factory.mktemp("traces")
    http_log, stdio_log = tmp / "http-trace.jsonl", tmp / "stdio-trace.jsonl"
    upstream = start_fixture_http(
        {"FIXTURE_TRACE_LOG": str(http_log), "FIXTURE_ECHO_CLIENT": "1", "FIXTURE_API_KEY": API_KEY}
    )
    url = f"sqlite:///{tmp / 'toolcrib.db'}"
    owner = cli_json(url, "init")
    assert isinstance(owner, dict)
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream.url)
    stdio = " ".join(FIXTURE_SERVER)
    env = f"FIXTURE_TRACE_LOG={stdio_log}"
    cli(url, "connections", "add", "local", "--connector", "Local", "--command", stdio, "--env", env)
    with running_receiver() as receiver:
        gateway = start_gateway(url, _otel(receiver))
        try:
            yield Traced(gateway, str(owner["token"]), receiver, http_log, stdio_log)
        finally:
            gateway.stop()
            upstream.stop()


def _seen(log: Path, tool: str) -> list[dict[str, Any]]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [row for line in lines if (row := json.loads(line))["tool"] == tool]


def _trace_id(traceparent: str | None) -> str:
    assert traceparent is not None
    version, trace_id, parent_id, flags = traceparent.split("-")
    assert (version, len(trace_id), len(parent_id)) == ("00", 32, 16)
    assert int(flags, 16) & 1  # sampled
    return trace_id


def _named(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]


def _ancestors(spans: list[ReceivedSpan], span: ReceivedSpan) -> list[str]:
    """The names of ``span``'s parents, nearest first."""
    by_id = {s.span_id: s for s in spans}
    names, parent = [], by_id.get(span.parent_id)
    while parent is not None:
        names.append(parent.name)
        parent = by_id.get(parent.parent_id)
    return names


def _steps(spans: list[ReceivedSpan]) -> set[str]:
    """The pipeline steps the database spans name."""
    return {str(s.attributes["toolcrib.step"]) for s in spans if "toolcrib.step" in s.attributes}


def _whole(
    receiver: OtlpReceiver, trace_id: str, *names: str, steps: tuple[str, ...] = ()
) -> list[ReceivedSpan]:
    """The spans of one trace once every span named (and every step) has arrived: spans end, and
    are exported, in batches, so a trace's spans may come in more than one request."""

    def ready(got: list[ReceivedSpan]) -> bool:
        mine = [s for s in got if s.trace_id == trace_id]
        return all(_named(mine, n) for n in names) and set(steps) <= _steps(mine)

    return [s for s in receiver.wait_for(ready) if s.trace_id == trace_id]


def _first(receiver: OtlpReceiver, name: str, **attributes: Any) -> ReceivedSpan:
    """The first span named ``name`` with ``attributes``, once it has arrived."""

    def matching(got: list[ReceivedSpan]) -> list[ReceivedSpan]:
        return [
            s for s in got if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())
        ]

    return matching(receiver.wait_for(lambda got: bool(matching(got))))[0]


EXECUTE_SPANS = ("POST /mcp", "tools/call execute_tool", "execute_tool", "db.transaction")


async def test_24_search_and_execute_are_spans_at_the_collector_and_the_upstream_continues_the_trace(
    traced: Traced,
) -> None:
    async with connect(traced.gateway.url, traced.token) as client:
        found = payload(await client.call_tool("search_tools", {"query": f"add two numbers {QUERY_WORD}"}))
        handle = next(c["action_id"] for c in found["results"] if c["name"] == "desk__add_numbers")
        for _ in range(2):  # two calls on one upstream session: a traceparent each, not one per session
            done = await client.call_tool(
                "execute_tool", {"action_id": handle, "arguments": {"a": SECRET_NUMBER, "b": 1}}
            )
            assert not done.is_error

    search = _first(traced.receiver, "search_tools")
    assert search.attributes["toolcrib.operation"] == "search_tools"
    assert search.attributes["toolcrib.member"] == "owner"
    assert search.attributes["toolcrib.outcome"] == "ok"
    in_search = _whole(
        traced.receiver,
        search.trace_id,
        "POST /mcp",
        "search.encode",
        "search.rank",
        steps=("search.handles",),
    )
    assert _ancestors(in_search, search)[-1] == "POST /mcp"
    rank = next(s for s in in_search if s.name == "search.rank")
    assert rank.attributes["toolcrib.search.answered"] is True
    assert _ancestors(in_search, rank)[0] == "search_tools"

    calls = _seen(traced.http_log, "add_numbers")
    assert len(calls) == 2
    assert len({_trace_id(c["header"]) for c in calls}) == 2
    for call in calls:
        assert call["meta"] == call["header"]  # the same context in _meta and in the HTTP header
        in_trace = _whole(
            traced.receiver,
            _trace_id(call["header"]),
            *EXECUTE_SPANS,
            "upstream tools/call add_numbers",
            "MCP send tools/call add_numbers",
            steps=("authenticate", "execute.audit_open", "execute.audit_close"),  # R-11.1's two writes
        )
        [execute] = _named(in_trace, "execute_tool")
        assert execute.attributes == {
            "toolcrib.member": "owner",
            "toolcrib.operation": "desk__add_numbers",
            "toolcrib.account": "desk",
            "toolcrib.tool": "add_numbers",
            "toolcrib.outcome": "ok",
        }
        assert _ancestors(in_trace, execute) == ["tools/call execute_tool", "POST /mcp"]
        for transaction in _named(in_trace, "db.transaction"):
            assert transaction.attributes["db.system.name"] == "sqlite"
            above = _ancestors(in_trace, transaction)
            if transaction.attributes.get("toolcrib.step") == "authenticate":  # the bearer's check
                assert above == ["POST /mcp"]
            else:
                assert "execute_tool" in above
        upstream = _named(in_trace, "upstream tools/call add_numbers")[0]
        assert upstream.kind == "client"
        assert upstream.attributes["toolcrib.account"] == "desk"
        # the upstream's parent is the SDK's client span of this call, under ours, under execute_tool
        sent = next(s for s in in_trace if s.span_id == call["header"].split("-")[2])
        assert sent.name == "MCP send tools/call add_numbers"
        assert _ancestors(in_trace, sent)[:2] == ["upstream tools/call add_numbers", "execute_tool"]
    assert {s.service for s in traced.receiver.spans} == {"toolcrib"}

    # never an argument, a query, a result or the token, in any byte that left the gateway
    sent_bytes = b"".join(traced.receiver.bodies)
    for value in (str(SECRET_NUMBER), str(SECRET_NUMBER + 1), QUERY_WORD, traced.token):
        assert value.encode() not in sent_bytes


async def test_24_an_upstream_error_leaves_no_free_text_in_any_span(traced: Traced) -> None:
    """The SDK's client span takes the upstream's error message as its status; it quotes the
    connection's key, so spans leave without status descriptions or exception events."""
    async with connect(traced.gateway.url, traced.token) as client:
        failed = await client.call_tool(
            "execute_tool",
            {"tool": "desk__fetch_client_data", "arguments": {"api_key": API_KEY, "fail": True}},
        )
    assert failed.is_error
    execute = _first(traced.receiver, "execute_tool", **{"toolcrib.tool": "fetch_client_data"})
    assert execute.attributes["toolcrib.outcome"] == "upstream_error"
    assert execute.attributes["toolcrib.error_code"] == "upstream_error"
    assert execute.status_code == 2  # STATUS_CODE_ERROR
    in_trace = _whole(
        traced.receiver, execute.trace_id, *EXECUTE_SPANS, "MCP send tools/call fetch_client_data"
    )
    [sent] = _named(in_trace, "MCP send tools/call fetch_client_data")
    assert sent.status_code == 2
    assert all(s.status_message == "" and "exception" not in s.events for s in traced.receiver.spans)
    assert API_KEY.encode() not in b"".join(traced.receiver.bodies)


async def test_24_a_stdio_upstream_gets_the_trace_context_in_meta(traced: Traced) -> None:
    async with connect(traced.gateway.url, traced.token) as client:
        done = await client.call_tool(
            "execute_tool", {"tool": "local__add_numbers", "arguments": {"a": 1, "b": 2}}
        )
    assert not done.is_error
    [call] = _seen(traced.stdio_log, "add_numbers")
    assert call["header"] is None
    names = (*EXECUTE_SPANS, "upstream tools/call add_numbers", "MCP send tools/call add_numbers")
    in_trace = _whole(traced.receiver, _trace_id(call["meta"]), *names)
    [execute] = _named(in_trace, "execute_tool")
    assert execute.attributes["toolcrib.account"] == "local"
    [upstream] = _named(in_trace, "upstream tools/call add_numbers")
    assert upstream.attributes["toolcrib.transport"] == "stdio"
    sent = next(s for s in in_trace if s.span_id == call["meta"].split("-")[2])
    assert _ancestors(in_trace, sent)[:2] == ["upstream tools/call add_numbers", "execute_tool"]


async def test_24_an_incoming_traceparent_on_post_mcp_is_continued(traced: Traced) -> None:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    headers = {"Authorization": f"Bearer {traced.token}", "traceparent": f"00-{trace_id}-{parent_id}-01"}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    transport = streamable_http_client(traced.gateway.url + "/mcp", http_client=http)
    async with http, Client(transport, cache=None) as client:
        done = await client.call_tool(
            "execute_tool", {"tool": "desk__echo_message", "arguments": {"message": "hi"}}
        )
    assert not done.is_error
    in_trace = _whole(traced.receiver, trace_id, *EXECUTE_SPANS)
    posts = _named(in_trace, "POST /mcp")
    assert all(s.kind == "server" for s in posts)
    assert parent_id in {s.parent_id for s in posts}  # the caller's span is the request's parent
    [call] = _seen(traced.http_log, "echo_message")
    assert _trace_id(call["header"]) == trace_id


async def test_24_latency_exemplars_carry_the_trace_id(traced: Traced) -> None:
    async with connect(traced.gateway.url, traced.token) as client:
        done = await client.call_tool(
            "execute_tool", {"tool": "desk__add_numbers", "arguments": {"a": 2, "b": 3}}
        )
    assert not done.is_error
    auth = {"Authorization": f"Bearer {traced.token}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        open_metrics = await http.get(
            traced.gateway.url + "/metrics", headers={**auth, "Accept": "application/openmetrics-text"}
        )
        classic = await http.get(traced.gateway.url + "/metrics", headers=auth)
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    lines = [
        line
        for line in open_metrics.text.splitlines()
        if line.startswith("toolcrib_tool_call_seconds_bucket{")
        and 'tool="execute_tool"' in line
        and " # {" in line
    ]
    assert lines
    exemplar_ids = {line.split('trace_id="')[1][:32] for line in lines}
    for trace_id in exemplar_ids:  # each the trace of an execute_tool call the collector got
        _whole(traced.receiver, trace_id, "execute_tool")
    assert classic.headers["content-type"].startswith("text/plain")
    assert " # {" not in classic.text


async def test_24_without_otel_variables_no_trace_context_leaves(tmp_path: Path) -> None:
    """No OTEL_* exporter variable: no SDK loaded, no span, and the upstream sees no traceparent
    (only the unrelated OTEL_BSP_SCHEDULE_DELAY is set, which turns nothing on)."""
    log = tmp_path / "trace.jsonl"
    upstream = start_fixture_http({"FIXTURE_TRACE_LOG": str(log)})
    url = f"sqlite:///{tmp_path / 'toolcrib.db'}"
    try:
        owner = cli_json(url, "init")
        assert isinstance(owner, dict)
        cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--url", upstream.url)
        quiet = {"OTEL_BSP_SCHEDULE_DELAY": "100", "TOOLCRIB_LOG_LEVEL": "INFO", "TOOLCRIB_SEMANTIC": "false"}
        gateway = start_gateway(url, quiet)
        try:
            async with connect(gateway.url, str(owner["token"])) as client:
                done = await client.call_tool(
                    "execute_tool", {"tool": "desk__echo_message", "arguments": {"message": "hi"}}
                )
            assert not done.is_error
        finally:
            gateway.stop()
    finally:
        upstream.stop()
    [call] = _seen(log, "echo_message")
    assert call["header"] is None
    assert call["meta"] is None
    assert "traces: exported" not in Path(url.removeprefix("sqlite:///")).with_suffix(".log").read_text()
