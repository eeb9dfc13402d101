"""toolcrib's stdio transport to an upstream MCP server (the SDK's ``stdio_client`` interface).

It differs from the SDK's in how it reads: lines are split in linear time and a message over
``max_message_bytes`` is skipped without being held (``framing``); the call it answered gets an
error answer the session turns into ``too_large``, and the session stays usable. An oversized
request or notification of the server is dropped; an oversized answer whose request id cannot be
found ends the transport, so the session restarts cleanly instead of leaving a call waiting.

The process lifecycle follows the SDK's (and the MCP spec's shutdown sequence): the server runs in
a session of its own; on exit its stdin is closed, it gets a grace period, then its whole process
group gets SIGTERM and, if still there, SIGKILL; every wait is bounded and shielded, so a cancelled
caller neither leaks a live server nor hangs on one. On Windows the SDK's own client is used.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import IO, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import AsyncResource, Process
from anyio.streams.memory import MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from toolcrib.upstream.framing import LineSplitter, Oversized, refusal, sent_by_the_server

__all__ = ["stdio_transport"]

logger = logging.getLogger(__name__)

_GRACE = 2.0  # for the server to exit by itself once its stdin is closed
_FORCE_KILL = 2.0  # between SIGTERM and SIGKILL of its process group
_REAP = 2.0  # for the event loop to see the kill
_FLUSH = 0.5  # for the writer to send messages already accepted
_POLL = 0.01
_CHUNK = 1024 * 1024

_Incoming = MemoryObjectSendStream[SessionMessage | Exception]


@asynccontextmanager
async def stdio_transport(
    command: Sequence[str], *, env: Mapping[str, str], errlog: IO[bytes], max_message_bytes: int
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` and exchange newline-delimited JSON-RPC with it over its stdin/stdout."""
    if sys.platform == "win32":  # pragma: no cover - toolcrib is served from POSIX hosts
        params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(env))
        async with stdio_client(params, errlog=errlog) as streams:  # type: ignore[arg-type]
            yield streams
        return
    process = await anyio.open_process(
        list(command), env=get_default_environment() | dict(env), stderr=errlog, start_new_session=True
    )
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with outgoing:
                async for message in outgoing:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await incoming.aclose()  # the session sees the connection end, no request hangs
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(_read, process, incoming, max_message_bytes)
        tg.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH):
                    await writer_done.wait()
                await _stop(process)
                for stream in (read_stream, write_stream, incoming, outgoing):
                    await stream.aclose()
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()


async def _read(process: Process, incoming: _Incoming, limit: int) -> None:
    """Deliver each stdout line as a message; then drain stdout so the server never blocks on it."""
    assert process.stdout is not None
    splitter = LineSplitter(limit)
    try:
        async with incoming:
            async for chunk in _chunks(process):
                for line in splitter.feed(chunk):
                    if not await _deliver(incoming, line, limit):
                        return
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
        pass  # our own shutdown closed a stream under the read
    finally:
        await _drain(process)


async def _chunks(process: Process) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    while True:
        try:
            yield await process.stdout.receive(_CHUNK)
        except anyio.EndOfStream:
            return


async def _deliver(incoming: _Incoming, line: bytes | Oversized, limit: int) -> bool:
    """Send one line on to the session; False when the transport must end."""
    if isinstance(line, Oversized):
        logger.warning("an upstream message of %d bytes is over the limit of %d bytes", line.size, limit)
        if sent_by_the_server(line):
            return True  # a request or notification of the server: dropped, nothing waits for it
        answer = refusal(line, limit)
        if answer is None:
            return False  # an answer to a call it does not name: end here, the session restarts
        await incoming.send(answer)
        return True
    if not line.strip():
        return True
    try:
        message: SessionMessage | Exception = SessionMessage(
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        )
    except ValueError as exc:
        logger.warning("an upstream sent a line that is not JSON-RPC")
        message = exc
    await incoming.send(message)
    return True


async def _drain(process: Process) -> None:
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), suppress(Exception):
        while True:
            await process.stdout.receive(_CHUNK)


async def _stop(process: Process) -> None:
    """Close stdin, wait the grace period, then end the whole process group (bounded waits)."""
    assert process.stdin is not None
    assert process.stdout is not None
    await _close(process.stdin)
    if not await _exited(process, _GRACE):
        await terminate_posix_process_tree(process, _FORCE_KILL)
        if not await _exited(process, _REAP):
            logger.warning("upstream process %d is still alive after SIGKILL; abandoning it", process.pid)
    await _close(process.stdout)
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()


async def _close(stream: AsyncResource) -> None:
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()


async def _exited(process: Process, within: float) -> bool:
    """Whether the process ended within ``within`` seconds, by polling its return code (not ``wait()``,
    which also waits for pipes a grandchild may hold open)."""
    deadline = anyio.current_time() + within
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL)
    return True
