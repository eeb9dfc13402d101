"""R-11.4: the audit stream delivers every final entry at least once, and retention waits for it.

Real parts: a gateway with the fixture upstream (stdio), a webhook receiver (HTTP, in a thread)
that refuses its first deliveries and checks each body's HMAC itself, a syslog TCP receiver parsing
RFC 5424 frames, the real command line for the export, a real PostgreSQL for two deliverers side by
side. Waits are on conditions, bounded; back-off bounds come from the settings.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from sqlalchemy import func, select

from tests.admin.console import console, sign_in
from tests.conftest import PG_SECRET_KEY, PYTHON, ROOT, cli
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.e2e.sinks import SyslogReceiver, WebhookReceiver
from tests.pg import PostgresServer
from tests.principals import OPERATOR
from tests.web.asgi import asgi_client, bearer
from toolcrib.gateway.audit.delivery import AuditStream
from toolcrib.gateway.audit.entries import record_admin_act
from toolcrib.gateway.audit.retention import prune_audit
from toolcrib.gateway.audit.sinks import WebhookSink
from toolcrib.gateway.audit.stream import stream_state
from toolcrib.gateway.calls.execute import execute_tool
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.housekeeping import housekeep, recover_orphans
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.settings import Settings
from toolcrib.store import instances
from toolcrib.store.database import Database
from toolcrib.store.outbox import add, claim, use_sinks
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
    async with gw.store.db.read() as conn:
        return set((await conn.execute(select(audit.c.id).where(audit.c.outcome != "pending"))).scalars())


async def outbox_rows(gw: Gateway) -> int:
    async with gw.store.db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(audit_outbox))).scalar_one())


async def calls(gw: Gateway, n: int, first: int = 0) -> None:
    principal = await operator_principal(gw.store, None)
    for i in range(first, first + n):
        await execute_tool(gw, principal, tool="desk__delete_ticket", arguments={"ticket_id": f"T-{i}"})


def valid(events: list[dict[str, Any]]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    for e in events:
        validator.validate(e)


@pytest.mark.usefixtures("on_each_store")
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


async def test_r11_4_a_failing_sink_keeps_its_events_and_shows_on_metrics_and_the_console(
    tmp_path: Path,
) -> None:
    receiver = WebhookReceiver(secret=SECRET).start()
    try:  # the gateway signs with the wrong secret: the receiver refuses every delivery
        settings = settings_for(
            tmp_path, audit_sink_url=receiver.url, audit_sink_secret="not-the-secret", **FAST
        )
        async with open_gateway(settings) as gw:
            token = await owner_token(gw)
            await record_admin_act(
                gw, member="owner", account="x", operation="x__y", outcome="ok", error_code=None
            )
            await until(lambda: receiver.bad_signatures >= 2)
            assert receiver.events == []
            pending = await outbox_rows(gw)
            assert pending >= 1  # kept for when it is fixed
            async with asgi_client(gw) as http:
                text = (await http.get("/metrics", headers=bearer(token))).text
            async with console(gw) as c:
                browser = await c.browser()
                await sign_in(browser, token)
                page = (await browser.get("/admin/audit")).text
        series = {
            line.split(" ")[0]: float(line.split(" ")[1])
            for line in text.splitlines()
            if line.startswith("toolcrib_audit_stream")
        }
        assert series['toolcrib_audit_stream_pending{sink="webhook"}'] == pending
        assert series['toolcrib_audit_stream_lag_seconds{sink="webhook"}'] > 0
        assert series['toolcrib_audit_stream_failures_total{sink="webhook"}'] >= 2
        assert series['toolcrib_audit_stream_delivered_total{sink="webhook"}'] == 0
        assert "Audit stream" in page
        assert "failing (" in page
        assert "webhook answered 401" in page
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
            assert await gw.audit_stream.deliver(gw.store.db, sink) >= 3
            receiver.stop()  # the sink goes down
            old_waiting = await act("old__waiting")
            assert await gw.audit_stream.deliver(gw.store.db, sink) == 0
            now[0] += 10 * 86_400
            recent = await act("recent__sent")
            assert (
                await prune_audit(gw.store.db, gw.store.clock(), gw.settings.audit_retention_days) >= 3
            )  # the three sent (and any row the owner's creation wrote)
            left = await final_audit_ids(gw)
            assert left == {old_waiting, recent}
            assert not left & set(old_sent)
            assert await housekeep(gw)  # wired into housekeeping: nothing more to delete
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


async def test_r11_4_two_deliverers_over_one_postgresql_lose_no_event(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    receiver = WebhookReceiver().start()
    url = postgres.create_database()
    settings = Settings(database_url=url, secret_key=PG_SECRET_KEY, audit_sink_url=receiver.url, **FAST)
    try:
        async with open_gateway(settings) as one, open_gateway(settings) as two:
            await owner_token(one)

            async def acts(gw: Gateway, tag: str) -> None:
                for i in range(100):
                    await record_admin_act(
                        gw,
                        member="owner",
                        account="x",
                        operation=f"x__{tag}{i}",
                        outcome="ok",
                        error_code=None,
                    )

            async with anyio.create_task_group() as tg:
                tg.start_soon(acts, one, "a")
                tg.start_soon(acts, two, "b")
            expected = await final_audit_ids(one)
            assert len(expected) >= 200
            await until(lambda: receiver.audit_ids() >= expected, 60)
            await until(
                lambda: (
                    one.audit_stream.delivered["webhook"] + two.audit_stream.delivered["webhook"]
                    >= len(expected)
                )
            )
            assert await outbox_rows(one) == 0
        assert receiver.audit_ids() == expected
        assert len(receiver.ids()) == len(expected)
    finally:
        receiver.stop()


async def test_r11_4_a_claim_skips_rows_another_transaction_holds_on_postgresql(
    postgres: PostgresServer,
) -> None:
    import psycopg

    url = postgres.create_database()
    db = Database(url)
    try:
        await db.migrate()
        use_sinks(db, ["webhook"])
        async with db.begin() as conn:
            for i in range(4):
                row = {"started_at": 1.0, "member": "m", "grant_id": "g", "account": "a", "connector": "c",
                       "operation": f"a__t{i}", "classification": "read", "approved": True,
                       "outcome": "ok"}  # fmt: skip
                written = await conn.execute(audit.insert().values(**row))
                await add(conn, db, list(written.inserted_primary_key or ()))
        with psycopg.connect(url) as other:  # another deliverer, mid-claim on the two oldest rows
            held = other.execute("SELECT id FROM audit_outbox ORDER BY id LIMIT 2 FOR UPDATE").fetchall()
            with anyio.fail_after(10):  # skipped, not waited for
                mine = await claim(db, "webhook", limit=10, hold_seconds=30)
            other.rollback()
        assert {c.outbox_id for c in mine}.isdisjoint({r[0] for r in held})
        assert len(mine) == 2
        assert await claim(db, "webhook", limit=10, hold_seconds=30) != []  # the released two are due
        assert await claim(db, "webhook", limit=10, hold_seconds=30) == []  # every row is now claimed
    finally:
        await db.close()


class _OtlpReceiver:
    """An OTLP/HTTP logs endpoint decoding each request's protobuf (``opentelemetry-proto``)."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        self.records: list[Any] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportLogsServiceRequest.FromString(body)
                receiver.paths.append(self.path)
                for resource in request.resource_logs:
                    for scope in resource.scope_logs:
                        receiver.records.extend((resource, r) for r in scope.log_records)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


async def test_r11_4_otlp_logs_reach_the_collector_one_record_per_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = _OtlpReceiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "toolcrib-test")
    try:
        async with open_gateway(settings_for(tmp_path, audit_otlp_logs=True, **FAST)) as gw:
            await owner_token(gw)
            await record_admin_act(
                gw, member="owner", account="x", operation="x__y", outcome="error", error_code="nope"
            )
            expected = await final_audit_ids(gw)
            await until(lambda: len(collector.records) >= len(expected))
        assert set(collector.paths) == {"/v1/logs"}
        resource, record = collector.records[-1]
        assert resource.resource.attributes[0].value.string_value == "toolcrib-test"
        body = {kv.key: kv.value for kv in record.body.kvlist_value.values}
        assert body["status_code"].string_value == "error"
        assert body["status_detail"].string_value == "nope"
        assert record.severity_text == "WARN"
        assert record.attributes[0].key == "event.id"
        assert record.attributes[0].value.string_value == body["id"].string_value
    finally:
        collector.server.shutdown()
        collector.server.server_close()


async def test_r11_4_a_dead_process_call_read_unknown_is_streamed_too(tmp_path: Path) -> None:
    receiver = WebhookReceiver().start()
    try:
        async with open_gateway(settings_for(tmp_path, audit_sink_url=receiver.url, **FAST)) as gw:
            ghost = instances.Instance(id="ins_ghost", host="elsewhere", pid=1)
            await instances.register(gw.store.db, ghost, gw.store.clock() - 60)
            async with gw.store.db.begin() as conn:
                row = {"started_at": gw.store.clock() - 50, "member": "m", "grant_id": "g", "account": "a",
                       "connector": "c", "operation": "a__t", "classification": "read", "approved": True,
                       "outcome": "pending", "instance": ghost.id}  # fmt: skip
                written = await conn.execute(audit.insert().values(**row))
            assert await outbox_rows(gw) == 0  # pending: not final, not streamed
            assert await recover_orphans(gw.store.db, gw.instance, gw.store.clock(), gw.settings) == 1
            orphan = int(written.inserted_primary_key[0])
            await until(lambda: orphan in receiver.audit_ids())
        (found,) = [e for e in receiver.events if e["unmapped"]["audit_id"] == orphan]
        assert found["status_code"] == "unknown"
        assert found["status"] == "Unknown"
        assert found["end_time"] is None
        valid([found])
    finally:
        receiver.stop()


def test_r11_4_back_off_doubles_from_its_setting_up_to_its_bound() -> None:
    stream = AuditStream(Settings(audit_stream_backoff_seconds=0.5, audit_stream_backoff_max_seconds=3))
    assert [stream.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_r11_4_a_syslog_address_without_a_port_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="host:port"):
        Settings(audit_syslog="siem.example.org")


async def test_r11_4_the_authorization_servers_admin_rows_get_their_outbox_rows(tmp_path: Path) -> None:
    from toolcrib.store import oauth_server

    db = Database(f"sqlite:///{tmp_path / 'o.db'}")
    try:
        await db.migrate()
        use_sinks(db, ["webhook", "syslog"])
        await oauth_server.audit_admin(db, member="m", grant_id="g", operation="oauth__refresh_reused",
                                       error_code="grant_revoked", now=1.0)  # fmt: skip
        async with db.read() as conn:
            rows = (await conn.execute(select(audit_outbox.c.sink, audit_outbox.c.event_id))).all()
        assert sorted(r.sink for r in rows) == ["syslog", "webhook"]
        assert len({r.event_id for r in rows}) == 1  # one event, one id, for every sink
    finally:
        await db.close()
