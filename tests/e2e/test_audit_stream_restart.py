"""R-11.4, the issue's show: a sink down for 5 calls, the gateway killed (SIGKILL) with those events
undelivered, restarted with the sink up but refusing its first two deliveries, 5 more calls: all
10 events arrive, each id once or more, none missing, every body's signature checked.

Real parts: ``toolcrib serve`` as a subprocess (killed for real), the fixture upstream over HTTP,
the webhook receiver in a thread of this process, the SQLite file read by another connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Process, cli, cli_json, free_port, start_gateway
from tests.e2e.mcpclient import connect, gateway_payload
from tests.e2e.sinks import WebhookReceiver, wait_until
from tests.pg import read_rows

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET = "whsec-restart-0123456789"


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    made = WebhookReceiver(secret=SECRET, fail_first=2, port=free_port())  # not started: the sink is down
    yield made
    made.stop()


def _env(receiver: WebhookReceiver) -> dict[str, str]:
    return {
        "TOOLCRIB_AUDIT_SINK_URL": receiver.url,
        "TOOLCRIB_AUDIT_SINK_SECRET": SECRET,
        "TOOLCRIB_AUDIT_STREAM_POLL_SECONDS": "0.1",
        "TOOLCRIB_AUDIT_STREAM_BACKOFF_SECONDS": "0.1",
        "TOOLCRIB_AUDIT_STREAM_BACKOFF_MAX_SECONDS": "0.5",
        "TOOLCRIB_AUDIT_SINK_TIMEOUT_SECONDS": "1",
        "TOOLCRIB_SEMANTIC": "false",  # no model to load: the stream is what is measured
    }


async def _calls(gateway: Process, token: str, first: int) -> None:
    async with connect(gateway.url, token) as client:
        for i in range(first, first + 5):
            call: dict[str, Any] = {"tool": "desk__delete_ticket", "arguments": {"ticket_id": f"T-{i}"}}
            result = await client.call_tool("execute_tool", call)
            assert not result.is_error, gateway_payload(result)


def _count(db_url: str, sql: str) -> int:
    return int(str(read_rows(db_url, sql)[0][0]))


async def test_r11_4_sink_down_restart_and_refusals_lose_no_event(
    tmp_path: Path, fixture_http: Process, receiver: WebhookReceiver, store_url: str
) -> None:
    """On SQLite the restarted process takes the dead one's lease once it expired; on PostgreSQL it
    takes the dead one's claimed batch once its claim expired."""
    db_url = store_url
    token = str(cli_json(db_url, "init")["token"])  # type: ignore[index]
    cli(db_url, "connections", "add", "desk", "--connector", "Helpdesk", "--url", fixture_http.url)
    gateway = start_gateway(db_url, _env(receiver), log_path=tmp_path / "gw1.log")
    try:
        await _calls(gateway, token, 0)
        waiting = (
            "SELECT count(*) FROM audit_outbox o JOIN audit a ON a.id = o.audit_id WHERE a.kind = 'call'"
        )
        assert _count(db_url, waiting) == 5  # written with each call's final entry, before its answer
        wait_until(lambda: _count(db_url, "SELECT max(attempts) FROM audit_outbox") >= 2, what="retries")
    finally:
        gateway.proc.kill()  # SIGKILL: no shutdown, the lease and any claim left behind
        gateway.proc.wait(10)
        gateway.stop()
    assert receiver.requests == 0
    receiver.start()  # the sink is up again, refusing its first two deliveries
    gateway = start_gateway(db_url, _env(receiver), log_path=tmp_path / "gw2.log")
    try:
        await _calls(gateway, token, 5)
        calls = {int(str(r[0])) for r in read_rows(db_url, "SELECT id FROM audit WHERE kind = 'call'")}
        assert len(calls) == 10
        wait_until(lambda: receiver.audit_ids() >= calls, timeout=60, what="all 10 events")
        wait_until(lambda: _count(db_url, "SELECT count(*) FROM audit_outbox") == 0, what="an empty outbox")
    finally:
        gateway.stop()
    received = [e for e in receiver.events if e["activity_name"] == "call"]
    ids = {e["id"] for e in received}
    assert len(ids) == 10  # each event once or more, under one id
    assert {e["unmapped"]["audit_id"] for e in received} == calls  # none missing
    assert {e["resources"][0]["uid"] for e in received} == {f"T-{i}" for i in range(10)}
    assert receiver.refused == 2
    assert receiver.bad_signatures == 0
