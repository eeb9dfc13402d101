"""toolcrib's stdio transport: oversized lines it cannot attribute, and ending the whole process
tree on exit as the SDK does (#10, R-13.2). Real child processes, real pipes."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from toolcrib.upstream.stdio import stdio_transport

pytestmark = pytest.mark.anyio

CHATTY = r"""
import sys, time
note = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}\n'
sys.stdout.write(note % ("x" * 5000))  # over the limit, sent by the server: dropped
sys.stdout.write(note % "small")
sys.stdout.write('{"result":{"text":"%s"},"jsonrpc":"2.0"}\n' % ("y" * 5000))  # answers no nameable id
sys.stdout.write(note % "never")
sys.stdout.flush()
time.sleep(300)
"""

STUBBORN = r"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
deaf = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
child = subprocess.Popen([sys.executable, "-c", deaf])
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)
"""


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie waiting for a parent that is not ours to reap."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


async def test_an_oversized_notification_is_dropped_and_an_unattributable_answer_ends_the_stream() -> None:
    with tempfile.TemporaryFile() as errlog:
        command = [sys.executable, "-c", CHATTY]
        async with stdio_transport(command, env={}, errlog=errlog, max_message_bytes=1024) as (read, _write):
            with anyio.fail_after(20):
                first = await read.receive()
                assert isinstance(first.message, types.JSONRPCNotification)
                assert first.message.params is not None
                assert first.message.params["data"] == "small"
                with pytest.raises(anyio.EndOfStream):
                    await read.receive()


@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
async def test_r13_2_leaving_the_transport_ends_a_server_that_ignores_stdin_and_sigterm(
    tmp_path: Path,
) -> None:
    pids_file = tmp_path / "pids"
    with tempfile.TemporaryFile() as errlog:
        command = [sys.executable, "-c", STUBBORN, str(pids_file)]
        async with stdio_transport(command, env={}, errlog=errlog, max_message_bytes=1024):
            with anyio.fail_after(20):
                while not pids_file.exists():  # noqa: ASYNC110 - the child writes it once started, bounded
                    await anyio.sleep(0.02)
        server, grandchild = map(int, pids_file.read_text().split())
    with anyio.fail_after(10):
        while not (gone(server) and gone(grandchild)):  # noqa: ASYNC110 - the kernel delivers SIGKILL, bounded
            await anyio.sleep(0.02)
    assert server != os.getpid()
