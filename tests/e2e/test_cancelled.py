"""A call the caller cancels is ``cancelled`` everywhere it is recorded, never ``internal_error``
(R-3.3, R-11.1, #21).

Over real HTTP (the in-process uvicorn gateway) with the real fixture server as the stdio
connection ``desk``: its ``wait_until_cancelled`` tool writes a marker when it starts and another
when the gateway's cancellation reaches it. The caller cancels in the two ways a client can — a
session's ``notifications/cancelled`` (stateful), or closing the HTTP connection of a stateless
POST — and then the audit row, the ``tool_call`` log line and the ``/metrics`` counter all say
``cancelled``, and no incident (an ``internal_error``) is logged.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import httpx2
import pytest
from sqlalchemy import select

from tests.e2e.flow import Served, client, desk_gateway, read_marker, wait_for
from toolcrib.store.tables import audit

pytestmark = pytest.mark.anyio

TOOL = "desk__wait_until_cancelled"


async def _cancel_mid_call(served: Served, marker: Path) -> None:
    """Start the slow call, wait until the upstream runs it, then cancel the client's request."""
    call = {"tool": TOOL, "arguments": {"marker": str(marker)}}
    async with client(served.base, served.owner, mode="legacy") as c, anyio.create_task_group() as tg:
        tg.start_soon(c.call_tool, "execute_tool", call)

        async def started() -> bool:
            return read_marker(marker) == "started"

        await wait_for(started)
        tg.cancel_scope.cancel()


async def _audit_outcomes(served: Served) -> list[str]:
    """The audit rows' outcomes of the call, read from the table itself."""
    async with served.gw.store.db.read() as conn:
        rows = await conn.execute(select(audit.c.outcome).where(audit.c.operation == TOOL))
        return [str(r[0]) for r in rows]


async def _metric_outcomes(served: Served) -> dict[str, float]:
    """``toolcrib_tool_calls_total`` of ``execute_tool`` by outcome, as ``/metrics`` shows it."""
    headers = {"Authorization": f"Bearer {served.owner}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        text = (await http.get(served.base + "/metrics", headers=headers)).text
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("toolcrib_tool_calls_total{") and 'tool="execute_tool"' in line:
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            found[outcome] = float(line.rsplit(" ", 1)[1])
    return found


@pytest.mark.parametrize("stateless", [False, True])
async def test_r3_3_a_cancelled_call_is_recorded_cancelled_not_internal_error(
    tmp_path: Path, stateless: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    marker = tmp_path / "marker.txt"
    async with desk_gateway(tmp_path, stateless=stateless) as served:
        await _cancel_mid_call(served, marker)

        async def upstream_cancelled() -> bool:
            return read_marker(marker) == "cancelled"

        await wait_for(upstream_cancelled)

        async def closed() -> list[str]:
            outcomes = await _audit_outcomes(served)
            return outcomes if outcomes and "pending" not in outcomes else []

        assert await wait_for(closed) == ["cancelled"]

        async def counted() -> dict[str, float]:
            return await _metric_outcomes(served)

        assert await wait_for(counted) == {"cancelled": 1.0}

    calls = [r.getMessage() for r in caplog.records if "event=tool_call" in r.getMessage()]
    assert len(calls) == 1, calls
    assert "outcome=cancelled" in calls[0], calls
    assert not [r for r in caplog.records if r.name == "toolcrib.incidents"]
