"""Where the audit stream goes (R-11.4): a webhook, syslog over TCP, OTLP logs.

A sink takes a batch of events (``gateway.audit.event``) and returns once the receiver has them,
or raises :class:`SinkFailed` (the deliverer then backs off and sends the batch again: at least
once). What "has them" means is the protocol's: the webhook's 2xx answer, the OTLP collector's 2xx
answer; syslog over TCP (RFC 5424 framed per RFC 6587) has no acknowledgement, so a batch counts as
received once the kernel took every byte of it; a receiver that dies with bytes unread loses them
(RELP would fix that; no Python client of it is maintained).

The webhook's URL passes the outbound address policy like every other fetch (R-13.5). The OTLP
endpoint and the syslog address are the operator's own collectors, named in the environment.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import unquote

import anyio
import anyio.abc

from toolcrib.addresses import AddressPolicy
from toolcrib.settings import Settings

__all__ = ["Sink", "SinkFailed", "sinks_for"]

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Toolcrib-Signature"


class SinkFailed(Exception):
    """The receiver did not take the batch; ``why`` is a short reason for the log and the console
    (no URL credentials, no response body)."""


class Sink(Protocol):
    name: str

    async def send(self, events: list[dict[str, Any]]) -> None: ...

    async def aclose(self) -> None: ...


def signature(secret: str, body: bytes) -> str:
    """The webhook signature header's value: ``sha256=`` and the hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class WebhookSink:
    """POST a JSON array of the batch's events; any 2xx answer is a delivery."""

    name = "webhook"

    def __init__(self, url: str, secret: str | None, addresses: AddressPolicy, timeout: float) -> None:
        self._url = url
        self._secret = secret
        from toolcrib.addresses import guarded_client  # httpx2: only when a webhook is configured (#33)

        self._client = guarded_client(addresses, timeout=timeout, follow_redirects=False)

    async def send(self, events: list[dict[str, Any]]) -> None:
        import httpx2  # loaded with the client, in __init__

        body = json.dumps(events, separators=(",", ":"), sort_keys=True).encode()
        headers = {"Content-Type": "application/json"}
        if self._secret:
            headers[SIGNATURE_HEADER] = signature(self._secret, body)
        try:
            answer = await self._client.post(self._url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise SinkFailed(f"webhook unreachable ({type(exc).__name__})") from exc
        if not 200 <= answer.status_code < 300:
            raise SinkFailed(f"webhook answered {answer.status_code}")

    async def aclose(self) -> None:
        await self._client.aclose()


_FACILITY_AUDIT = 13  # RFC 5424 "log audit"


def syslog_frame(event: dict[str, Any], *, host: str, pid: int) -> bytes:
    """One event as an RFC 5424 message (MSG: the event's JSON), octet-counted (RFC 6587)."""
    severity = 6 if event["status_code"] == "ok" else 4  # informational / warning
    when = (event.get("end_time") or event["time"]) / 1000
    stamp = datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    body = json.dumps(event, separators=(",", ":"), sort_keys=True)
    message = f"<{_FACILITY_AUDIT * 8 + severity}>1 {stamp} {host} toolcrib {pid} audit - {body}".encode()
    return str(len(message)).encode() + b" " + message


class SyslogSink:
    """RFC 5424 over one TCP connection, kept open between batches and reopened after a failure."""

    name = "syslog"

    def __init__(self, address: str, timeout: float) -> None:
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError("TOOLCRIB_AUDIT_SYSLOG must be host:port")
        self._host, self._port = host.strip("[]"), int(port)
        self._timeout = timeout
        self._stream: anyio.abc.SocketStream | None = None
        self._me = (socket.gethostname()[:255] or "-").replace(" ", "-")

    async def send(self, events: list[dict[str, Any]]) -> None:
        data = b"".join(syslog_frame(e, host=self._me, pid=os.getpid()) for e in events)
        try:
            with anyio.fail_after(self._timeout):
                if self._stream is None:
                    self._stream = await anyio.connect_tcp(self._host, self._port)
                await self._stream.send(data)
        except (OSError, TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            await self.aclose()
            raise SinkFailed(f"syslog unreachable ({type(exc).__name__})") from exc

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with anyio.CancelScope(shield=True):
                await stream.aclose()


def _otlp_endpoint() -> str:
    logs = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
    if logs:
        return logs
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    return base.rstrip("/") + "/v1/logs"


def _otlp_headers() -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_(LOGS_)HEADERS``: ``key=value`` pairs, comma-separated, URL-encoded."""
    raw = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    pairs = (item.split("=", 1) for item in raw.split(",") if "=" in item)
    return {unquote(k).strip(): unquote(v).strip() for k, v in pairs}


class OtlpLogsSink:
    """One OTLP log record per event, OTLP/HTTP protobuf (``opentelemetry-proto``, imported here)."""

    name = "otlp"

    def __init__(self, timeout: float) -> None:
        from toolcrib.gateway.audit import otlp  # the protobuf packages, only when this sink is on

        self._encode = otlp.encode
        self._url = _otlp_endpoint()
        headers = {"Content-Type": "application/x-protobuf", **_otlp_headers()}
        import httpx2  # only when this sink is on (#33)

        self._client = httpx2.AsyncClient(timeout=timeout, headers=headers, trust_env=False)

    async def send(self, events: list[dict[str, Any]]) -> None:
        import httpx2  # loaded with the client, in __init__

        body = await anyio.to_thread.run_sync(self._encode, events)
        try:
            answer = await self._client.post(self._url, content=body)
        except httpx2.HTTPError as exc:
            raise SinkFailed(f"OTLP collector unreachable ({type(exc).__name__})") from exc
        if not 200 <= answer.status_code < 300:
            raise SinkFailed(f"OTLP collector answered {answer.status_code}")

    async def aclose(self) -> None:
        await self._client.aclose()


def sink_names(settings: Settings) -> tuple[str, ...]:
    """The sinks ``settings`` configure, in a fixed order (the outbox gets a row for each)."""
    names = []
    if settings.audit_sink_url:
        names.append(WebhookSink.name)
    if settings.audit_syslog:
        names.append(SyslogSink.name)
    if settings.audit_otlp_logs:
        names.append(OtlpLogsSink.name)
    return tuple(names)


def sinks_for(settings: Settings, addresses: AddressPolicy) -> list[Sink]:
    """The configured sinks, ready to send. One that cannot start (the OTLP sink without its
    package) is left out with an error in the log: its events wait in the outbox, counted on
    ``/metrics`` and the console, until a process that can deliver them runs."""
    timeout = settings.audit_sink_timeout_seconds
    makers: dict[str, Any] = {
        WebhookSink.name: lambda: WebhookSink(
            settings.audit_sink_url or "", settings.audit_sink_secret, addresses, timeout
        ),
        SyslogSink.name: lambda: SyslogSink(settings.audit_syslog or "", timeout),
        OtlpLogsSink.name: lambda: OtlpLogsSink(timeout),
    }
    sinks: list[Sink] = []
    for name in sink_names(settings):
        try:
            sinks.append(makers[name]())
        except (ImportError, ValueError) as exc:
            logger.error(
                "audit stream: the %s sink cannot start (%s); its events wait in the outbox", name, exc
            )
    return sinks
