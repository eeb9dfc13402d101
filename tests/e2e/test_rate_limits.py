"""#21 finding 5: nothing limited a runaway agent. R-7.10: calls per minute and per day per member,
role, account or tool, on ``execute_tool`` and on control-plane writes; a call over a limit answers
``rate_limited`` with ``retry_after`` and reaches nothing upstream; REST answers 429 with
``Retry-After``. On SQLite and on a real PostgreSQL (the buckets in the store)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import select

from tests.conftest import FIXTURE_SERVER
from tests.e2e.flow import client
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import gateway_payload
from tests.e2e.org import ALL_SCOPES, PREFIX
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.store.tables import audit

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

ECHO = "desk__echo_message"
START = 1_760_000_000.0


@dataclass
class Limited:
    gw: Gateway
    base: str
    owner: str
    calls: Path
    now: list[float]

    def upstream_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    async def token(self, name: str, role: str = "member") -> str:
        await members.add_member(self.gw.store, name, role, actor=OPERATOR)
        return (await members.create_token(self.gw.store, name, ALL_SCOPES, actor=OPERATOR))[1]


@asynccontextmanager
async def _limited(tmp_path: Path) -> AsyncIterator[Limited]:
    """A gateway on a frozen clock, with one stdio connection ``desk`` that logs each call it gets."""
    now = [START]
    calls = tmp_path / "calls.log"
    settings = settings_for(tmp_path, policy_cache_seconds=0, connect_timeout_seconds=20)
    async with open_gateway(settings, lambda: now[0]) as gw:
        owner = await owner_token(gw)
        env = {"FIXTURE_CALL_LOG": str(calls)}
        row = await add_connection(
            gw, "desk", connector="Helpdesk", command=FIXTURE_SERVER, env=env, actor=OPERATOR
        )
        assert row.status == "active", row.reason
        async with serve(gw) as base:
            yield Limited(gw, base, owner, calls, now)


async def _outcomes(gw: Gateway, operation: str) -> list[str]:
    async with gw.store.db.read() as conn:
        rows = await conn.execute(select(audit.c.outcome).where(audit.c.operation == operation))
    return [r[0] for r in rows.all()]


async def _op(base: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with client(base, token) as c:
        result = await c.call_tool(PREFIX + name, arguments)
    return gateway_payload(result)


async def _echo(base: str, token: str, n: int) -> list[dict[str, Any]]:
    """``n`` calls of the echo tool in one session; each answer's structured content."""
    out = []
    async with client(base, token) as c:
        for i in range(n):
            result = await c.call_tool("execute_tool", {"tool": ECHO, "arguments": {"message": f"m{i}"}})
            out.append(gateway_payload(result) if result.is_error else {"ok": True})
    return out


async def test_r7_10_a_runaway_member_is_stopped_at_the_limit_and_nothing_more_reaches_upstream(
    tmp_path: Path,
) -> None:
    async with _limited(tmp_path) as lim:
        mia, max_ = await lim.token("mia"), await lim.token("max")
        rule = await _op(lim.base, lim.owner, "limits__set", {"role": "member", "per_minute": 3})
        assert rule["result"]["per_minute"] == 3
        answers = await _echo(lim.base, mia, 4)
        assert answers[:3] == [{"ok": True}] * 3
        error = answers[3]["error"]
        assert error["code"] == "rate_limited"
        assert error["retry_after"] == 20  # 60 s / 3: one call comes back every 20 s
        assert lim.upstream_calls() == ["echo_message"] * 3  # the 4th reached nothing
        assert await _outcomes(lim.gw, ECHO) == ["ok"] * 3  # and wrote no audit row
        # another member spends their own budget, not mia's
        assert await _echo(lim.base, max_, 3) == [{"ok": True}] * 3
        assert (await _echo(lim.base, mia, 1))[0]["error"]["code"] == "rate_limited"
        # the budget comes back after the interval
        lim.now[0] += 19
        assert (await _echo(lim.base, mia, 1))[0]["error"]["retry_after"] == 1
        lim.now[0] += 1
        assert await _echo(lim.base, mia, 2) == [{"ok": True}, {"error": {**error, "retry_after": 20}}]
        assert len(lim.upstream_calls()) == 7


async def test_r7_10_a_limit_on_one_tool_leaves_the_others_free(tmp_path: Path) -> None:
    async with _limited(tmp_path) as lim:
        mia = await lim.token("mia")
        await _op(
            lim.base, lim.owner, "limits__set", {"account": "desk", "tool": "add_numbers", "per_day": 1}
        )
        async with client(lim.base, mia) as c:
            add = {"tool": "desk__add_numbers", "arguments": {"a": 1, "b": 2}}
            first, second = await c.call_tool("execute_tool", add), await c.call_tool("execute_tool", add)
            echo = await c.call_tool("execute_tool", {"tool": ECHO, "arguments": {"message": "hi"}})
        assert not first.is_error
        assert gateway_payload(second)["error"]["code"] == "rate_limited"
        assert gateway_payload(second)["error"]["retry_after"] == 86_400
        assert not echo.is_error
        assert lim.upstream_calls() == ["add_numbers", "echo_message"]


async def test_r7_10_control_plane_writes_over_a_limit_answer_rate_limited_and_429_over_rest(
    tmp_path: Path,
) -> None:
    async with _limited(tmp_path) as lim:
        ada = await lim.token("ada", "admin")
        await _op(lim.base, lim.owner, "limits__set", {"member": "ada", "per_minute": 2})
        headers = {"Authorization": f"Bearer {ada}"}
        async with httpx2.AsyncClient(base_url=lim.base, headers=headers, timeout=60) as http:
            made = [
                await http.post("/api/members/invite", json={"name": f"new-{i}", "role": "guest"})
                for i in range(3)
            ]
            read = await http.post("/api/members/list", json={})
        assert [r.status_code for r in made] == [200, 200, 429]
        assert made[2].headers["Retry-After"] == "30"
        assert made[2].json()["error"] == {
            "code": "rate_limited",
            "message": made[2].json()["error"]["message"],
            "retry_after": 30,
        }
        assert read.status_code == 200  # reads are not counted
        assert "new-2" not in [m["name"] for m in read.json()["result"]]
        over_mcp = await _op(lim.base, ada, "members__suspend", {"name": "new-0"})
        assert over_mcp["error"]["code"] == "rate_limited"
        assert over_mcp["error"]["retry_after"] == 30
        lim.now[0] += 30
        assert "result" in await _op(lim.base, ada, "members__suspend", {"name": "new-0"})
