"""Traces (R-14.2): the spans the gateway opens, and the W3C trace context it passes on.

This module is what every layer calls (the faces, the gateway, the upstream sessions, the store);
it imports no OpenTelemetry. Traces are turned on only by the standard ``OTEL_*`` variables (an
exporter endpoint, ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER``): then :func:`configure` loads the SDK and its OTLP/HTTP exporter
(:mod:`toolcrib.otlp`), once per process. Without them nothing is imported and nothing is sent,
every :func:`span` is one shared object that does nothing, and ``toolcrib --help`` stays fast.

What a span may carry is closed: the operation, the account, the tool, the member, the outcome and
its error code (in-band codes, R-3.3), and sizes/counts. Never arguments, results, queries,
headers or secrets, and never an exception's text (it can quote any of those): a failed span says
its error code and nothing else.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Protocol

from toolcrib.trace_attributes import (
    ACCOUNT,
    ERROR_CODE,
    MEMBER,
    OPERATION,
    OUTCOME,
    STEP,
    TOOL,
    Attribute,
    Kind,
)

__all__ = [
    "ACCOUNT",
    "ERROR_CODE",
    "MEMBER",
    "OPERATION",
    "OUTCOME",
    "STEP",
    "TOOL",
    "Attribute",
    "Kind",
    "Span",
    "SpanScope",
    "child_span",
    "configure",
    "enabled",
    "exemplar",
    "flush",
    "inject",
    "inject_headers",
    "server_span",
    "span",
    "step",
    "wanted_exporter",
]

logger = logging.getLogger(__name__)

_EXPORTERS = frozenset({"otlp", "console"})


class Span(Protocol):
    """What a step may say about itself: an allowed attribute, or how it ended."""

    def set(self, key: str, value: Attribute) -> None: ...

    def outcome(self, code: str) -> None:
        """``ok``, ``tool_error`` or an in-band error code; anything but ``ok`` marks the span failed."""


class _Nothing:
    """The span when traces are off: one shared object, every method does nothing."""

    __slots__ = ()

    def set(self, key: str, value: Attribute) -> None:
        return None

    def outcome(self, code: str) -> None:
        return None

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class Backend(Protocol):
    """What :mod:`toolcrib.otlp` gives once traces are on (its ``Tracing``); named here so that this
    module needs no import of it until :func:`configure` loads the SDK."""

    def span(
        self,
        name: str,
        attributes: Mapping[str, Attribute] | None,
        kind: Kind,
        carrier: Mapping[str, str] | None = None,
    ) -> SpanScope: ...

    def in_span(self) -> bool: ...

    def inject(self, carrier: MutableMapping[str, str]) -> None: ...

    def exemplar(self) -> dict[str, str] | None: ...

    def flush(self, timeout_seconds: float) -> None: ...


NOTHING = _Nothing()
_live: Backend | None = None
_step: ContextVar[str | None] = ContextVar("toolcrib_trace_step", default=None)
_configured = False


def wanted_exporter(environ: Mapping[str, str]) -> str | None:
    """The exporter the standard variables ask for (``otlp``, ``console``), or None: traces off.

    ``OTEL_SDK_DISABLED=true`` and ``OTEL_TRACES_EXPORTER=none`` turn them off; an exporter
    endpoint alone means OTLP; ``OTEL_TRACES_EXPORTER=otlp`` alone means OTLP to the default
    collector address. An exporter this build does not ship is named in a warning and ignored.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    named = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    if named:
        known = [n for n in named if n in _EXPORTERS]
        for other in sorted(set(named) - _EXPORTERS - {"none"}):
            logger.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none)", other)
        return known[0] if known else None
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return "otlp" if any(environ.get(name, "").strip() for name in endpoints) else None


def configure(environ: Mapping[str, str] | None = None) -> bool:
    """Turn traces on when the ``OTEL_*`` variables ask for them; whether they are on.

    Once per process (the first call decides; a server's worker process calls it after the fork).
    """
    global _live, _configured
    if _configured:
        return _live is not None
    _configured = True
    exporter = wanted_exporter(os.environ if environ is None else environ)
    if exporter is None:
        return False
    try:
        from toolcrib import otlp  # the SDK and the exporter: imported only now
    except ImportError:
        logger.warning("OTEL_* variables ask for traces, but the SDK is not installed: toolcrib[otel]")
        return False
    _live = otlp.start(exporter)
    return True


def enabled() -> bool:
    """Whether spans are recorded and exported in this process."""
    return _live is not None


def span(
    name: str, attributes: Mapping[str, Attribute] | None = None, *, kind: Kind = "internal"
) -> SpanScope:
    """A span around the block, a child of the current one. An exception leaving the block ends it
    failed with the exception's in-band code (``cancelled`` for a cancellation), never its text."""
    live = _live
    if live is None:
        return NOTHING
    return live.span(name, attributes, kind)


def child_span(name: str, attributes: Mapping[str, Attribute] | None = None) -> SpanScope:
    """A span only inside a recorded one (a database transaction of a traced call, not of the
    background housekeeping, which would otherwise be a trace of its own every few seconds). It
    names the :func:`step` it belongs to (``toolcrib.step``)."""
    live = _live
    if live is None or not live.in_span():
        return NOTHING
    current = _step.get()
    if current is not None:
        attributes = {**(attributes or {}), STEP: current}
    return live.span(name, attributes, "internal")


def step(name: str) -> SpanScope:
    """Mark a pipeline step whose I/O is occasional (a handle read on a cache miss, a rate-limit
    bucket, a stored result): no span of its own, but the database spans inside it name it.

    A span costs ~20-40 µs of CPU to record and export; a step that does no I/O in this call would
    be a span saying nothing, on the hot path of every call (``bench/overhead.py --tracing``).
    """
    if _live is None:
        return NOTHING
    return _Step(name)


class _Step:
    __slots__ = ("_name", "_token")

    def __init__(self, name: str) -> None:
        self._name = name

    def __enter__(self) -> Span:
        self._token = _step.set(self._name)
        return NOTHING

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _step.reset(self._token)


def server_span(
    name: str, headers: Mapping[str, str], attributes: Mapping[str, Attribute] | None = None
) -> SpanScope:
    """The span of one incoming request, continuing the caller's trace when ``headers`` carry a
    W3C ``traceparent`` (and ``tracestate``)."""
    live = _live
    if live is None:
        return NOTHING
    return live.span(name, attributes, "server", carrier=headers)


def inject(carrier: MutableMapping[str, str]) -> None:
    """Put the current trace context (``traceparent``, ``tracestate``) into ``carrier``: the
    headers of an upstream HTTP request. Nothing when traces are off."""
    live = _live
    if live is not None:
        live.inject(carrier)


async def inject_headers(request: Any) -> None:
    """An httpx request hook: the request's ``traceparent`` header, from the context it is sent in.

    The MCP SDK sends each upstream request from a task that runs in the calling task's context
    (with its ``tools/call`` client span current), so the header names the very call it carries,
    not the session: the same trace context the SDK puts in the request's ``_meta``.
    """
    inject(request.headers)


def exemplar() -> dict[str, str] | None:
    """The current trace and span ids, for a Prometheus exemplar; None outside a sampled span."""
    live = _live
    return live.exemplar() if live is not None else None


def flush(timeout_seconds: float = 5.0) -> None:
    """Export what is buffered (a server stopping); later spans are still recorded."""
    live = _live
    if live is not None:
        live.flush(timeout_seconds)


class SpanScope(Protocol):
    """A span's block: ``with tracing.span(...) as step:``."""

    def __enter__(self) -> Span: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
