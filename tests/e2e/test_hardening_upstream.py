"""A large upstream result through the real gateway: over the limit it answers too_large, audited,
and the next call on the same connection succeeds (issue #10, R-13.2, R-11.2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import FIXTURE_SERVER
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from toolcrib.errors import TooLarge
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.store.tables import audit

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

MiB = 1024 * 1024


async def test_r13_2_a_result_over_the_message_limit_is_too_large_and_the_connection_goes_on(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, max_upstream_message_bytes=4 * MiB)
    async with open_gateway(settings) as gw:
        await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        assert row.status == "active", row.reason
        principal = await operator_principal(gw.store, None)
        with pytest.raises(TooLarge) as refused:
            await execute_tool(gw, principal, tool="desk__sized_result", arguments={"size": 5 * MiB})
        assert refused.value.code == "too_large"
        answer = await execute_tool(gw, principal, tool="desk__add_numbers", arguments={"a": 1, "b": 2})
        assert answer["structuredContent"] == {"sum": 3.0}
        async with gw.store.db.begin() as conn:
            rows = (
                await conn.execute(select(audit.c.outcome, audit.c.error_code).order_by(audit.c.id))
            ).all()
        assert [tuple(r) for r in rows] == [("error", "too_large"), ("ok", None)]
