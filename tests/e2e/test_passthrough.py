"""Progress, log lines and cancellation pass through the gateway (#14; R-11.1's audit outcomes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.e2e.flow import audit_rows, client, desk_gateway, read_marker, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_14_stateful_client_sees_the_upstreams_three_progress_notifications_and_its_log(
    tmp_path: Path, mode: str
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with (
        desk_gateway(tmp_path, stateless=False) as served,
        client(served.base, served.owner, mode=mode, logging_callback=on_log, log_level="info") as c,
    ):
        call = {"tool": "desk__report_progress", "arguments": {}}
        result = await c.call_tool("execute_tool", call, progress_callback=on_progress)
        assert not result.is_error, result
        rows = await audit_rows(served.gw, "desk__report_progress")
    assert [p[0] for p in progress] == [1, 2, 3]
    assert [p[1] for p in progress] == [3, 3, 3]
    assert [params.data for params in logs] == ["three steps done"]
    assert [r.outcome for r in rows] == ["ok"]


async def test_14_a_call_without_a_progress_token_gets_no_progress(tmp_path: Path) -> None:
    """The progress of a call goes only to the request that asked for it."""
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async with (
        desk_gateway(tmp_path, stateless=False) as served,
        client(served.base, served.owner, message_handler=on_message) as c,
    ):
        result = await c.call_tool("execute_tool", {"tool": "desk__report_progress", "arguments": {}})
        assert not result.is_error, result
    assert not [m for m in seen if isinstance(m, types.ProgressNotification)]


@pytest.mark.parametrize(
    ("stateless", "mode"), [(True, "auto"), (True, "legacy"), (False, "auto"), (False, "legacy")]
)
async def test_14_a_cancelled_call_cancels_the_upstream_call_and_is_audited_cancelled(
    tmp_path: Path, stateless: bool, mode: str
) -> None:
    """Cancelling the client's request reaches the upstream server (it records the cancellation)
    in both modes: by ``notifications/cancelled`` in a session, by closing the HTTP connection."""
    marker = tmp_path / "marker.txt"
    call = {"tool": "desk__wait_until_cancelled", "arguments": {"marker": str(marker)}}
    async with desk_gateway(tmp_path, stateless=stateless) as served:
        async with client(served.base, served.owner, mode=mode) as c, anyio.create_task_group() as tg:
            tg.start_soon(c.call_tool, "execute_tool", call)

            async def started() -> bool:
                return read_marker(marker) == "started"

            await wait_for(started)
            tg.cancel_scope.cancel()

        async def upstream_cancelled() -> bool:
            return read_marker(marker) == "cancelled"

        await wait_for(upstream_cancelled)

        async def closed() -> list[str]:
            outcomes = [r.outcome for r in await audit_rows(served.gw, "desk__wait_until_cancelled")]
            return outcomes if outcomes and "pending" not in outcomes else []

        assert await wait_for(closed) == ["cancelled"]
