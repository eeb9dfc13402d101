"""R-11.1: a call still in flight is never marked unknown by another process; a dead one's calls are."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from sqlalchemy import select

from tests.conftest import PYTHON
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.housekeeping import recover_orphans
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.store import instances
from toolcrib.store.tables import audit

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


async def _outcomes(gw: Gateway) -> list[str]:
    async with gw.store.db.begin() as conn:
        return list((await conn.execute(select(audit.c.outcome).order_by(audit.c.id))).scalars())


async def test_r11_1_another_process_starting_leaves_a_live_call_pending(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    async with open_gateway(settings) as serving:
        await owner_token(serving)
        await add_connection(
            serving,
            "desk",
            connector="Helpdesk",
            command=[PYTHON, "-m", "tests.fixtures.fixture_server"],
            actor=OPERATOR,
        )
        principal = await operator_principal(serving.store, None)
        async with anyio.create_task_group() as tg:
            call = {"tool": "desk__slow_operation", "arguments": {"seconds": 2}}
            tg.start_soon(lambda: execute_tool(serving, principal, **call))
            with anyio.fail_after(15):
                while await _outcomes(serving) != ["pending"]:  # noqa: ASYNC110 - polling the database, bounded
                    await anyio.sleep(0.05)
            async with open_gateway(settings) as cli_like:  # e.g. `toolcrib audit search` meanwhile
                assert await _outcomes(cli_like) == ["pending"]
        assert await _outcomes(serving) == ["ok"]


async def test_r11_1_calls_of_a_process_with_a_stale_heartbeat_read_unknown(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, heartbeat_seconds=5)
    async with open_gateway(settings) as gw:
        ghost = instances.Instance(id="ins_ghost", host="elsewhere", pid=1)
        now = gw.store.clock()
        await instances.register(gw.store.db, ghost, now - 60)
        async with gw.store.db.begin() as conn:
            row = {
                "started_at": now - 50, "member": "m", "grant_id": "g", "account": "a", "connector": "c",
                "operation": "a__t", "classification": "read", "approved": True, "outcome": "pending",
                "instance": ghost.id,
            }  # fmt: skip
            await conn.execute(audit.insert().values(**row))
        assert await recover_orphans(gw.store.db, gw.instance, gw.store.clock(), gw.settings) == 1
        assert await _outcomes(gw) == ["unknown"]
