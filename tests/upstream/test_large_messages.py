"""Large upstream results: read in linear time, and one over the limit refused in-band (#10, R-13.2).

Against the real fixture server over stdio and over Streamable HTTP, through toolcrib's own transport.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import pytest

from tests.conftest import FIXTURE_SERVER, ROOT, Process
from tests.upstream.conftest import SESSION_OPTIONS
from toolcrib.errors import TooLarge
from toolcrib.upstream.session import UpstreamSession
from toolcrib.upstream.spec import UpstreamSpec
from toolcrib.upstream.supervisor import Upstreams

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
LIMIT = 8 * MiB
STDIO = UpstreamSpec(
    name="fx", transport="stdio", command=tuple(FIXTURE_SERVER), env={"PYTHONPATH": str(ROOT)}
)


@pytest.fixture
async def upstreams() -> AsyncIterator[Upstreams]:
    """The shared supervisor, with the message limit these tests measure against."""
    async with Upstreams.running(**SESSION_OPTIONS, max_message_bytes=LIMIT) as running:
        yield running


async def pid_of(session: UpstreamSession) -> int:
    answer = await session.call_tool("echo_message", {"message": "hi"})
    return int(json.loads(answer["content"][0]["text"])["pid"])


async def read_seconds(session: UpstreamSession, size: int) -> float:
    """The CPU seconds this process spends on one call returning ``size`` bytes: the reader's own
    work, which a busy machine does not inflate as it does wall time (the server that writes the
    bytes runs in its own process and is not counted)."""
    start = time.process_time()
    answer = await session.call_tool("sized_result", {"size": size})
    seconds = time.process_time() - start
    assert len(answer["content"][0]["text"]) == size
    return seconds


async def test_r13_2_reading_a_stdio_result_takes_time_linear_in_its_size() -> None:
    async with Upstreams.running(**SESSION_OPTIONS, max_message_bytes=64 * MiB) as running:
        session = running.session(STDIO)
        await read_seconds(session, MiB)  # warm up: the process, imports, caches
        small, large = float("inf"), float("inf")
        for _ in range(5):  # interleaved, so a busy machine slows both alike; the best of each
            small = min(small, await read_seconds(session, MiB))
            large = min(large, await read_seconds(session, 16 * MiB))
    per_byte_ratio = (large / 16) / small
    print(f"1 MiB: {small:.3f} s, 16 MiB: {large:.3f} s, per-byte ratio {per_byte_ratio:.2f}")
    # Re-splitting the whole buffer per chunk (the SDK's reader) measured 5.3 here (3.3 s for 16 MiB).
    assert per_byte_ratio < 2.5


async def test_r13_2_a_stdio_result_over_the_limit_is_too_large_and_the_session_goes_on(
    upstreams: Upstreams,
) -> None:
    session = upstreams.session(STDIO)
    before = await pid_of(session)
    with pytest.raises(TooLarge) as refused:
        await session.call_tool("sized_result", {"size": LIMIT + MiB})
    assert refused.value.code == "too_large"
    assert (await session.call_tool("add_numbers", {"a": 1, "b": 2}))["structuredContent"] == {"sum": 3.0}
    assert await pid_of(session) == before  # the same process: no restart was needed
    under = await session.call_tool("sized_result", {"size": LIMIT - MiB})
    assert len(under["content"][0]["text"]) == LIMIT - MiB


async def test_r13_2_an_http_result_over_the_limit_is_too_large_and_the_next_call_works(
    upstreams: Upstreams, fixture_http: Process
) -> None:
    session = upstreams.session(UpstreamSpec(name="web", transport="http", url=fixture_http.url))
    with pytest.raises(TooLarge) as refused:
        await session.call_tool("sized_result", {"size": LIMIT + MiB})
    assert refused.value.code == "too_large"
    assert (await session.call_tool("add_numbers", {"a": 2, "b": 2}))["structuredContent"] == {"sum": 4.0}
