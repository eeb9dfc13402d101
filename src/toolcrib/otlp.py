"""The OpenTelemetry SDK and its OTLP/HTTP exporter, set up from the standard ``OTEL_*`` variables.

Imported by :func:`toolcrib.tracing.configure` only when those variables ask for traces. Everything
else is the SDK's own reading of the variables: the endpoint and its headers, timeout and
compression (``OTEL_EXPORTER_OTLP_[TRACES_]*``), the batching (``OTEL_BSP_*``), the sampler
(``OTEL_TRACES_SAMPLER[_ARG]``), the resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``;
the service is ``toolcrib`` unless they name it) and the propagators (``OTEL_PROPAGATORS``, W3C
trace context by default). The global tracer provider is set too, so the MCP SDK's own spans (its
client's ``MCP send tools/call`` and its server's ``tools/call``) join the same traces.

Spans are exported from the batch processor's thread, never on the event loop, and without free
text: a span's status description and its exception events are dropped on the way out
(:class:`WithoutText`), as the MCP SDK's spans put an upstream's error message there, which can
quote a credential (R-13.3). Only ``http/protobuf`` is shipped; a ``grpc`` protocol setting is
named in a warning and HTTP is used.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
from collections.abc import Mapping, MutableMapping, Sequence
from types import TracebackType

import anyio
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolcrib.trace_attributes import ERROR_CODE, OUTCOME, Attribute, Kind

__all__ = ["LiveSpan", "Tracing", "WithoutText", "start"]

logger = logging.getLogger(__name__)

_KINDS = {"internal": SpanKind.INTERNAL, "server": SpanKind.SERVER, "client": SpanKind.CLIENT}
_TRACER = "toolcrib"


def start(exporter: str) -> Tracing:
    """A tracer provider exporting through ``exporter`` (``otlp`` or ``console``), made global."""
    provider = TracerProvider(resource=_resource())
    provider.add_span_processor(BatchSpanProcessor(WithoutText(_exporter(exporter))))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # what is still buffered leaves with the process
    logger.info("traces: exported over %s", "OTLP/HTTP" if exporter == "otlp" else exporter)
    return Tracing(provider)


def _resource() -> Resource:
    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME: "toolcrib"}))
    return found


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = os.environ.get(variable, "").strip()
        if protocol and protocol != "http/protobuf":
            logger.warning("%s=%s: only http/protobuf is shipped; exporting over it", variable, protocol)
            break
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


class WithoutText(SpanExporter):
    """Spans leave without free text: no status description, no exception event (see above)."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._inner.export([_plain(one) for one in spans])

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _plain(span: ReadableSpan) -> ReadableSpan:
    events = [event for event in span.events if event.name != "exception"]
    if span.status.description is None and len(events) == len(span.events):
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class Tracing:
    """The live side of :mod:`toolcrib.tracing`."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(_TRACER)

    def span(
        self,
        name: str,
        attributes: Mapping[str, Attribute] | None,
        kind: Kind,
        carrier: Mapping[str, str] | None = None,
    ) -> LiveSpan:
        parent = propagate.extract(carrier) if carrier is not None else None
        return LiveSpan(self._tracer, name, attributes, _KINDS[kind], parent)

    @staticmethod
    def in_span() -> bool:
        return trace.get_current_span().is_recording()

    @staticmethod
    def inject(carrier: MutableMapping[str, str]) -> None:
        propagate.inject(carrier)

    @staticmethod
    def exemplar() -> dict[str, str] | None:
        found = trace.get_current_span().get_span_context()
        if not found.is_valid or not found.trace_flags.sampled:
            return None
        return {"trace_id": format(found.trace_id, "032x"), "span_id": format(found.span_id, "016x")}

    def flush(self, timeout_seconds: float) -> None:
        self._provider.force_flush(int(timeout_seconds * 1000))


class LiveSpan:
    """One recorded span, current for the block (the MCP SDK's spans and the ``traceparent`` of
    upstream calls made inside it are its children)."""

    __slots__ = ("_attributes", "_code", "_kind", "_name", "_parent", "_span", "_token", "_tracer")

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        attributes: Mapping[str, Attribute] | None,
        kind: SpanKind,
        parent: otel_context.Context | None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._kind = kind
        self._parent = parent
        self._code: str | None = None

    def __enter__(self) -> LiveSpan:
        self._span = self._tracer.start_span(
            self._name, context=self._parent, kind=self._kind, attributes=self._attributes
        )
        self._token = otel_context.attach(trace.set_span_in_context(self._span, self._parent))
        return self

    def set(self, key: str, value: Attribute) -> None:
        self._span.set_attribute(key, value)

    def outcome(self, code: str) -> None:
        self._code = code

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            code = self._code if exc is None else _code_of(exc)
            if code is not None:
                self._span.set_attribute(OUTCOME, code)
            if code not in (None, "ok"):
                self._span.set_attribute(ERROR_CODE, code)
                self._span.set_attribute("error.type", code)
                self._span.set_status(Status(StatusCode.ERROR))
            self._span.end()
        finally:
            otel_context.detach(self._token)


def _cancelled(exc: BaseException) -> bool:
    try:
        cancelled = anyio.get_cancelled_exc_class()
    except RuntimeError:  # a worker thread's span (encode, rank): no event loop in this thread
        cancelled = asyncio.CancelledError
    return isinstance(exc, cancelled)


def _code_of(exc: BaseException) -> str:
    """An exception's in-band code (R-3.3), never its text; ``cancelled`` for a cancellation."""
    if _cancelled(exc):
        return "cancelled"
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code != "internal" else "internal_error"
