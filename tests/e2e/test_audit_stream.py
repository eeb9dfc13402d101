"""R-11.4: the audit stream delivers every final entry at least once, and retention waits for it.

Real parts: a gateway with the fixture upstream (stdio), a webhook receiver (HTTP, in a thread)
that refuses its first deliveries and checks each body's HMAC itself, a syslog TCP receiver parsing
RFC 5424 frames, the real command line for the export, a real PostgreSQL for two deliverers side by
side. Waits are on conditions, bounded; back-off bounds come from the settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from sqlalchemy import func, select

from tests.conftest import PYTHON, ROOT, cli
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.e2e.sinks import SyslogReceiver, WebhookReceiver
from tests.principals import OPERATOR
from toolcrib.gateway.audit import record_admin_act
from toolcrib.gateway.audit_retention import prune_audit
from toolcrib.gateway.audit_sinks import WebhookSink
from toolcrib.gateway.audit_stream import stream_state
from toolcrib.gateway.connections import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.execute import execute_tool
from toolcrib.gateway.members import operator_principal
from toolcrib.store.tables import audit, audit_outbox

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET = "whsec-test-0123456789"
FAST: dict[str, Any] = {
    "audit_stream_poll_seconds": 0.05,
    "audit_stream_backoff_seconds": 0.05,
    "audit_stream_backoff_max_seconds": 0.2,
    "audit_sink_timeout_seconds": 2.0,
}
SCHEMA = json.loads((ROOT / "docs" / "audit-event.schema.json").read_text())
FIXTURE = [PYTHON, "-m", "tests.fixtures.fixture_server"]


async def until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    """Yield to the gateway's own tasks until ``condition`` holds (at most ``seconds``)."""
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - a receiver in another thread; bounded above
            await anyio.sleep(0.02)


async def final_audit_ids(gw: Gateway) -> set[int]:
    async with gw.db.read() as conn:
        return set((await conn.execute(select(audit.c.id).where(audit.c.outcome != "pending"))).scalars())


async def outbox_rows(gw: Gateway) -> int:
    async with gw.db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(audit_outbox))).scalar_one())


async def calls(gw: Gateway, n: int, first: int = 0) -> None:
    principal = await operator_principal(gw, None)
    for i in range(first, first + n):
        await execute_tool(gw, principal, tool="desk__delete_ticket", arguments={"ticket_id": f"T-{i}"})


def valid(events: list[dict[str, Any]]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    for e in events:
        validator.validate(e)


async def test_r11_4_a_webhook_refusing_its_first_two_deliveries_gets_every_event_signed(
    tmp_path: Path,
) -> None:
    receiver = WebhookReceiver(secret=SECRET, fail_first=2).start()
    try:
        settings = settings_for(tmp_path, audit_sink_url=receiver.url, audit_sink_secret=SECRET, **FAST)
        async with open_gateway(settings) as gw:
            await owner_token(gw)
            await add_connection(gw, "desk", connector="Helpdesk", command=FIXTURE, actor=OPERATOR)
            await calls(gw, 5)
            await record_admin_act(
                gw,
                member="owner",
                account="desk",
                operation="desk__disconnect",
                outcome="ok",
                error_code=None,
            )
            expected = await final_audit_ids(gw)
            await until(lambda: receiver.audit_ids() >= expected)
            await until(lambda: gw.audit_stream.delivered["webhook"] >= len(expected))
            assert await outbox_rows(gw) == 0
            state = {s["sink"]: s for s in await stream_state(gw, OPERATOR)}
        assert receiver.refused == 2
        assert gw.audit_stream.failures["webhook"] >= 2
        assert state["webhook"]["pending"] == 0
        assert state["webhook"]["failing"] == 0
        assert receiver.bad_signatures == 0
        assert receiver.audit_ids() == expected
        assert len(receiver.ids()) == len(expected)  # one id per entry, however often redelivered
        valid(receiver.events)
        calls_seen = [e for e in receiver.events if e["activity_name"] == "call"]
        assert {e["resources"][0]["uid"] for e in calls_seen} == {f"T-{i}" for i in range(5)}
        assert {e["api"]["operation"] for e in calls_seen} == {"desk__delete_ticket"}
        assert all(e["status_code"] == "ok" and e["actor"]["user"]["name"] == "owner" for e in calls_seen)
        assert any(e["activity_name"] == "admin" for e in receiver.events)
    finally:
        receiver.stop()


async def test_r11_4_a_wrong_secret_is_refused_by_the_receiver_and_nothing_is_lost(tmp_path: Path) -> None:
    receiver = WebhookReceiver(secret=SECRET).start()
    try:
        settings = settings_for(
            tmp_path, audit_sink_url=receiver.url, audit_sink_secret="not-the-secret", **FAST
        )
        async with open_gateway(settings) as gw:
            await owner_token(gw)
            await record_admin_act(
                gw, member="owner", account="x", operation="x__y", outcome="ok", error_code=None
            )
            await until(lambda: receiver.bad_signatures >= 2)
            assert receiver.events == []
            assert await outbox_rows(gw) == 1
    finally:
        receiver.stop()


async def test_r11_4_syslog_receives_rfc5424_frames_one_per_event(tmp_path: Path) -> None:
    receiver = SyslogReceiver().start()
    try:
        settings = settings_for(tmp_path, audit_syslog=receiver.address, **FAST)
        async with open_gateway(settings) as gw:
            await owner_token(gw)
            await add_connection(gw, "desk", connector="Helpdesk", command=FIXTURE, actor=OPERATOR)
            await calls(gw, 3)
            expected = await final_audit_ids(gw)
            await until(lambda: {m["event"]["unmapped"]["audit_id"] for m in receiver.messages} >= expected)
            await until(lambda: gw.audit_stream.delivered["syslog"] >= len(expected))
            assert await outbox_rows(gw) == 0
        message = receiver.messages[-1]
        assert message["app"] == "toolcrib"
        assert message["msgid"] == "audit"
        assert int(message["pri"]) == 13 * 8 + 6  # log audit, informational
        datetime.fromisoformat(message["time"].replace("Z", "+00:00")).astimezone(UTC)
        valid([m["event"] for m in receiver.messages])
    finally:
        receiver.stop()


async def test_r11_4_no_sink_configured_writes_no_outbox_row(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        await owner_token(gw)
        await record_admin_act(
            gw, member="owner", account="x", operation="x__y", outcome="ok", error_code=None
        )
        assert await outbox_rows(gw) == 0
        assert gw.audit_stream.names == ()


async def test_r11_4_retention_deletes_old_delivered_entries_and_keeps_undelivered_ones(
    tmp_path: Path,
) -> None:
    receiver = WebhookReceiver().start()
    now = [datetime.now(UTC).timestamp() - 10 * 86_400]
    settings = settings_for(
        tmp_path, audit_sink_url=receiver.url, audit_retention_days=7, audit_stream_poll_seconds=60
    )
    try:
        async with open_gateway(settings, clock=lambda: now[0]) as gw:
            await owner_token(gw)
            sink = WebhookSink(receiver.url, None, gw.addresses, 5.0)

            async def act(op: str) -> int:
                entry = await record_admin_act(
                    gw, member="owner", account="x", operation=op, outcome="ok", error_code=None
                )
                assert entry.id is not None
                return entry.id

            old_sent = [await act("old__sent") for _ in range(3)]
            assert await gw.audit_stream.deliver(gw.db, sink) >= 3
            receiver.stop()  # the sink goes down
            old_waiting = await act("old__waiting")
            assert await gw.audit_stream.deliver(gw.db, sink) == 0
            now[0] += 10 * 86_400
            recent = await act("recent__sent")
            assert await prune_audit(gw) >= 3  # the three sent (and any row the owner's creation wrote)
            left = await final_audit_ids(gw)
            assert left == {old_waiting, recent}
            assert not left & set(old_sent)
            assert await gw.housekeep()  # wired into housekeeping: nothing more to delete
            assert await final_audit_ids(gw) == left
            await sink.aclose()
    finally:
        receiver.stop()


async def test_r11_4_audit_export_streams_json_lines_between_since_and_until(tmp_path: Path) -> None:
    day = 86_400.0
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    now = [start]
    settings = settings_for(tmp_path)
    async with open_gateway(settings, clock=lambda: now[0]) as gw:
        await owner_token(gw)
        for i in range(1200):  # more than two export pages
            now[0] = start + day + i
            await record_admin_act(
                gw, member="owner", account="x", operation=f"x__op{i}", outcome="ok", error_code=None
            )
        now[0] = start + 5 * day
        await record_admin_act(
            gw, member="owner", account="x", operation="x__late", outcome="ok", error_code=None
        )
    out = cli(settings.database_url, "audit", "export", "--since", "2026-01-02T00:00:00+00:00",
              "--until", "2026-01-03T00:00:00+00:00").stdout  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["operation"] for r in rows] == [f"x__op{i}" for i in range(1200)]
    limited = cli(settings.database_url, "audit", "export", "--limit", "3").stdout.splitlines()
    assert len(limited) == 3
