"""Audit events as OTLP log records (R-11.4), encoded with ``opentelemetry-proto``.

Imported only when ``TOOLCRIB_AUDIT_OTLP_LOGS`` is on (the protobuf packages cost start-up time).
Each event is one ``LogRecord``: its time, a severity (INFO for ``ok``, WARN otherwise), the event
itself as the body (a key/value list, so a backend indexes its fields) and the event id as the
attribute ``event.id``; the resource names the service (``OTEL_SERVICE_NAME``, else ``toolcrib``).
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

__all__ = ["encode"]

_INFO, _WARN = 9, 13  # OpenTelemetry severity numbers


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, dict):
        return AnyValue(
            kvlist_value=KeyValueList(values=[KeyValue(key=k, value=_value(v)) for k, v in value.items()])
        )
    if isinstance(value, list):
        return AnyValue(array_value=ArrayValue(values=[_value(v) for v in value]))
    return AnyValue()  # null


def _record(event: dict[str, Any]) -> LogRecord:
    ok = event["status_code"] == "ok"
    nanos = int(event.get("end_time") or event["time"]) * 1_000_000
    return LogRecord(
        time_unix_nano=nanos,
        observed_time_unix_nano=nanos,
        severity_number=_INFO if ok else _WARN,  # type: ignore[arg-type]
        severity_text="INFO" if ok else "WARN",
        event_name="toolcrib.audit",
        body=_value(event),
        attributes=[KeyValue(key="event.id", value=AnyValue(string_value=event["id"]))],
    )


def encode(events: list[dict[str, Any]]) -> bytes:
    """The serialized ``ExportLogsServiceRequest`` of a batch."""
    service = os.environ.get("OTEL_SERVICE_NAME") or "toolcrib"
    resource = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value=service))])
    scope = ScopeLogs(
        scope=InstrumentationScope(name="toolcrib.audit"), log_records=[_record(e) for e in events]
    )
    request = ExportLogsServiceRequest(resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope])])
    return bytes(request.SerializeToString())
