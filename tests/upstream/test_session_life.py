"""A stdio session's life (R-13.2): a server that dies under a call fails that call alone, the
operator's log says why in the server's own last words (redacted), and the next call starts the
server again; ``tools/list``, a read, is asked once more of a server that died under it; the idle
reaper never stops a session while it answers."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_SERVER
from tests.upstream.conftest import SESSION_OPTIONS
from toolcrib.errors import UpstreamError, UpstreamStopped
from toolcrib.upstream.spec import UpstreamSpec
from toolcrib.upstream.supervisor import Upstreams

pytestmark = pytest.mark.anyio

KEY = "fixture-secret-key-crash-7781"


async def test_r13_2_a_crash_is_logged_with_the_servers_last_line_redacted(
    upstreams: Upstreams, caplog: pytest.LogCaptureFixture
) -> None:
    spec = UpstreamSpec(
        name="desk", transport="stdio", command=tuple(FIXTURE_SERVER), env={"FIXTURE_API_KEY": KEY}
    )
    session = upstreams.session(spec)
    with (
        caplog.at_level(logging.WARNING, logger="toolcrib.upstream.session"),
        pytest.raises(UpstreamError, match="stopped during crash_server") as raised,
    ):
        await session.call_tool("crash_server", {})
    logged = [r.getMessage() for r in caplog.records if "crashed" in r.getMessage()]
    assert len(logged) == 1, caplog.text
    assert "stderr: fatal: exiting on request (key [REDACTED])" in logged[0]
    assert KEY not in caplog.text
    assert KEY not in str(raised.value)  # the caller's answer names no stderr at all
    assert "fatal" not in str(raised.value)
    again = await session.call_tool("echo_message", {"message": "back again"})
    assert not again.get("isError"), again
    assert "back again" in again["content"][0]["text"]


async def test_r13_2_the_idle_reaper_spares_a_session_answering_a_call_longer_than_the_idle_limit() -> None:
    """``idle_stop`` 0.3 s, a call of 2 s: the reaper (every 0.075 s) sees the session's last use
    go stale mid-call; counted from the last answer and not the call's start, it leaves it be."""
    options = {**SESSION_OPTIONS, "idle_stop": 0.3}
    async with Upstreams.running(**options) as upstreams:
        session = upstreams.session(
            UpstreamSpec(name="desk", transport="stdio", command=tuple(FIXTURE_SERVER))
        )
        result = await session.call_tool("slow_operation", {"seconds": 2})
        assert not result.get("isError"), result
        assert session.running


@pytest.mark.parametrize(("crashes", "listed"), [(1, True), (2, False)])
async def test_r13_2_tools_list_is_asked_once_more_of_a_server_that_died_under_it(
    upstreams: Upstreams, tmp_path: Path, caplog: pytest.LogCaptureFixture, crashes: int, listed: bool
) -> None:
    """One crash under ``tools/list``: the second session answers it. Two: the error, after two
    starts and no more (a server that always dies is not started in a loop)."""
    counter = tmp_path / "crashes"
    counter.write_text(str(crashes))
    env = {"FIXTURE_CRASH_LISTS": str(counter)}
    session = upstreams.session(
        UpstreamSpec(name="desk", transport="stdio", command=tuple(FIXTURE_SERVER), env=env)
    )
    with caplog.at_level(logging.WARNING, logger="toolcrib.upstream.session"):
        if listed:
            tools = await session.list_tools()
            assert "echo_message" in {t["name"] for t in tools}
        else:
            with pytest.raises(UpstreamStopped, match="stopped during tools/list"):
                await session.list_tools()
    assert caplog.text.count("crashed") == crashes
    assert caplog.text.count("stderr: fatal: crashing under tools/list") == crashes
    assert counter.read_text() == "0"
