"""Stdio framing of upstream messages: linear-time line splitting, oversized lines skipped (#10)."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from toolcrib.upstream.framing import LineSplitter, Oversized, is_too_large, refusal

CHUNK = 64 * 1024


def feed_all(splitter: LineSplitter, data: bytes, chunk: int = CHUNK) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for start in range(0, len(data), chunk):
        out += splitter.feed(data[start : start + chunk])
    return out


def test_lines_split_across_and_within_chunks() -> None:
    data = b'{"a":1}\n\n{"b":2}\n' + b"z" * 100 + b"\n" + b"tail"
    for chunk in (1, 3, 7, 1000):
        splitter = LineSplitter(limit=1000)
        assert feed_all(splitter, data, chunk) == [b'{"a":1}', b"", b'{"b":2}', b"z" * 100]
        assert splitter.held == 4  # "tail" waits for its newline


def test_a_line_over_the_limit_is_skipped_without_being_held() -> None:
    splitter = LineSplitter(limit=100_000)
    big = b'{"jsonrpc":"2.0","id":7,"result":{"text":"' + b"x" * 1_000_000 + b'"}}'
    out: list[bytes | Oversized] = []
    for start in range(0, len(big), CHUNK):
        out += splitter.feed(big[start : start + CHUNK])
        assert splitter.held <= 100_000 + CHUNK
    out += splitter.feed(b'\n{"jsonrpc":"2.0","id":8,"result":{}}\n')
    assert isinstance(out[0], Oversized)
    assert out[0].size == len(big)
    assert out[1] == b'{"jsonrpc":"2.0","id":8,"result":{}}'
    assert splitter.held == 0


def oversized(message: Any) -> Oversized:
    raw = json.dumps(message).encode()
    return Oversized(size=len(raw), head=raw[:4096], tail=raw[-4096:])


def test_an_oversized_response_answers_its_request_with_too_large() -> None:
    python_order = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "x" * 10_000}]},
    }
    ts_order = {
        "result": {"content": [{"type": "text", "text": "x" * 10_000, "id": 99}]},
        "jsonrpc": "2.0",
        "id": 8,
    }
    string_id = {"jsonrpc": "2.0", "id": "req-9", "result": {"text": "y" * 10_000}}
    for message, expected in ((python_order, 7), (ts_order, 8), (string_id, "req-9")):
        answer = refusal(oversized(message), limit=1000)
        assert answer is not None
        error = answer.message
        assert isinstance(error, types.JSONRPCError)
        assert error.id == expected
        assert is_too_large(error.error.code, error.error.data)


def test_an_oversized_request_or_notification_of_the_server_answers_nothing() -> None:
    request = {"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {"x": "y" * 9000}}
    notification = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "z" * 9000}}
    nested_id_only = {"result": {"inner": {"id": 5}}, "jsonrpc": "2.0"}
    for message in (request, notification, nested_id_only):
        assert refusal(oversized(message), limit=1000) is None
