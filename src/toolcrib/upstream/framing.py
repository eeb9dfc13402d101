"""Newline-delimited JSON-RPC framing of a stdio upstream, in linear time and with a size bound.

The MCP SDK's stdio client joins its whole pending buffer with each new chunk and splits it again,
so a message of n bytes costs O(n^2 / chunk) (20 MB took 39 s). Here the chunks of a line are kept
in a list and only the new chunk is searched for a newline, so every byte is looked at a constant
number of times. A line longer than the bound is not kept: its bytes are counted and dropped up to
the next newline, keeping only its first and last few KiB, enough to find out whom it answered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

__all__ = [
    "MESSAGE_TOO_LARGE",
    "LineSplitter",
    "Oversized",
    "is_too_large",
    "refusal",
    "sent_by_the_server",
    "too_large_data",
]

# A JSON-RPC error code in the implementation-defined range, with ``data.toolcrib == "too_large"``.
MESSAGE_TOO_LARGE = -32099
_MARK = "too_large"
_EDGE = 4096

_ID = rb'(-?\d+|"(?:[^"\\]|\\.){0,200}")'
# A response whose "id" comes first: {"jsonrpc":"2.0","id":7,"result"...} (Python SDK order).
_JSONRPC = rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
_HEAD_ID = re.compile(
    rb"\A\s*\{\s*" + _JSONRPC + rb'"id"\s*:\s*' + _ID + rb"\s*,\s*" + _JSONRPC + rb'"(?:result|error)"'
)
# A response that starts with its result and ends with its id: {"result":...,"jsonrpc":"2.0","id":7}
# (TypeScript SDK order). The id must be the top-level object's last key: one closing brace after it.
_HEAD_RESULT = re.compile(rb'\A\s*\{\s*"(?:result|error)"\s*:')
_TAIL_ID = re.compile(rb'"id"\s*:\s*' + _ID + rb"\s*\}\s*\Z")
_HEAD_REQUEST = re.compile(rb"\A\s*\{\s*" + _JSONRPC + rb'"(?:method|params)"\s*:')


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line that went over the bound: its size and its first and last few KiB."""

    size: int
    head: bytes
    tail: bytes


class LineSplitter:
    """Splits a byte stream into lines (without the newline); a line over ``limit`` comes out as
    ``Oversized`` and is never held whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:newline])
            out.append(self._finish())
            start = newline + 1
        if start < len(chunk):
            self._add(chunk[start:])
        return out

    @property
    def held(self) -> int:
        """Bytes kept in memory for the unfinished line (never much over ``limit``)."""
        return sum(map(len, self._parts)) + len(self._head) + len(self._tail)

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._skipping:
            self._tail = (self._tail + piece)[-_EDGE:]
        elif self._size > self.limit:
            seen = b"".join(self._parts) + piece
            self._head, self._tail = seen[:_EDGE], seen[-_EDGE:]
            self._parts.clear()
            self._skipping = True
        else:
            self._parts.append(piece)

    def _finish(self) -> bytes | Oversized:
        done: bytes | Oversized
        done = Oversized(self._size, self._head, self._tail) if self._skipping else b"".join(self._parts)
        self._parts.clear()
        self._size, self._skipping, self._head, self._tail = 0, False, b"", b""
        return done


def _response_id(item: Oversized) -> int | str | None:
    found = _HEAD_ID.match(item.head)
    if found is None and _HEAD_RESULT.match(item.head):
        found = _TAIL_ID.search(item.tail)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


def sent_by_the_server(item: Oversized) -> bool:
    """Whether an oversized line is a request or notification of the server (it answers nothing)."""
    return _HEAD_REQUEST.match(item.head) is not None


def refusal(item: Oversized, limit: int) -> SessionMessage | None:
    """The error answering the request an oversized line responded to, or None when it answered
    nothing that can be named (a notification or request of the server, or an id not found)."""
    if sent_by_the_server(item):
        return None
    request_id = _response_id(item)
    if request_id is None:
        return None
    error = types.ErrorData(
        code=MESSAGE_TOO_LARGE,
        message=f"the upstream's message of {item.size} bytes is over the limit of {limit} bytes",
        data=too_large_data(item.size, limit),
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def too_large_data(size: int, limit: int) -> dict[str, Any]:
    """The ``data`` of an error answer refusing an oversized message."""
    return {"toolcrib": _MARK, "bytes": size, "limit": limit}


def is_too_large(code: int, data: Any) -> bool:
    """Whether an error answer is this module's refusal of an oversized message."""
    return code == MESSAGE_TOO_LARGE and isinstance(data, dict) and data.get("toolcrib") == _MARK
