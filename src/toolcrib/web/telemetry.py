"""Prometheus metrics and the surface-size estimate (R-14.1). Token figures are estimates: bytes / 4.

Every label comes from a closed set, so no caller can grow the registry (#10): a tool is named only
when it is on the gateway's own surface (the meta-tools and the control-plane operations; anything
else is ``unknown``), an outcome is ``ok``, ``tool_error`` or an R-3.3 error code (anything else is
``internal_error``), and the surface figures are per role, never per member name.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics import exposition as openmetrics

from toolcrib import tracing
from toolcrib.policy.gates import Principal
from toolcrib.policy.roles import ROLES

__all__ = ["OUTCOMES", "UNKNOWN", "SavingsHistory", "Telemetry"]

UNKNOWN = "unknown"
"""The one label every name outside the closed set folds into."""

OUTCOMES: frozenset[str] = frozenset(
    {
        "ok",
        "tool_error",
        "permission_required",
        "scope_required",
        "not_found",
        "restricted",
        "forbidden",
        "connection_inactive",
        "handle_expired",
        "schema_changed",
        "tool_changed",
        "needs_input",
        "invalid_arguments",
        "upstream_error",
        "upstream_timeout",
        "rate_limited",
        "too_large",
        "needs_reauth",
        "approval_required",
        "approval_declined",
        "elicitation_unavailable",
        "store_busy",
        "cancelled",
        "internal_error",
    }
)
"""The outcome labels: success, an upstream's own ``isError``, and the error codes of R-3.3."""


def _bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


class _Outcome:
    def __init__(self) -> None:
        self.code = "ok"

    def error(self, code: str) -> None:
        self.code = code if code in OUTCOMES else "internal_error"


class SavingsHistory:
    """Model-facing bytes against a flat listing's, summed since start, over time (the console's chart).

    One point per ``step`` seconds (a later answer within the step moves the last point), at most
    ``size`` points: the memory it takes is bounded whatever the traffic.
    """

    def __init__(self, *, step: float = 60.0, size: int = 720) -> None:
        self._step = step
        self._points: deque[tuple[float, int, int]] = deque(maxlen=size)
        self.surface_bytes = 0
        self.flat_bytes = 0

    def add(self, *, surface: int, flat: int, now: float | None = None) -> None:
        self.surface_bytes += surface
        self.flat_bytes += flat
        at = time.time() if now is None else now
        point = (at, self.surface_bytes, self.flat_bytes)
        if self._points and at - self._points[-1][0] < self._step:
            self._points[-1] = (self._points[-1][0], point[1], point[2])
        else:
            self._points.append(point)

    def points(self) -> list[tuple[float, int, int]]:
        """``(unix time, model-facing bytes so far, flat-listing bytes so far)``, oldest first."""
        return list(self._points)


class Telemetry:
    """One registry per app (tests build many apps in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._tools: frozenset[str] = frozenset()
        self.savings = SavingsHistory()
        r = self.registry
        self.requests = Counter(
            "toolcrib_tool_calls_total", "MCP tools/call requests", ["tool", "outcome"], registry=r
        )
        self.latency = Histogram("toolcrib_tool_call_seconds", "tools/call latency", ["tool"], registry=r)
        self.searches = Counter("toolcrib_searches_total", "search_tools answers", ["result"], registry=r)
        self.upstream_failures = Counter(
            "toolcrib_upstream_failures_total", "upstream errors and timeouts", ["kind"], registry=r
        )
        self.surface = Counter(
            "toolcrib_surface_estimated_tokens_total",
            "Estimated tokens (bytes/4) of tools/list and search results sent, per caller role",
            ["role"],
            registry=r,
        )
        self.flat = Counter(
            "toolcrib_flat_listing_estimated_tokens_total",
            "Estimated tokens (bytes/4) a flat listing of the caller's visible catalog would have cost,"
            " per caller role",
            ["role"],
            registry=r,
        )
        self.audit_rows = Gauge(
            "toolcrib_audit_rows_written", "audit rows written by this process", registry=r
        )

    def name_tools(self, names: Iterable[str]) -> None:
        """The tool names that get a label of their own: the surface ``tools/list`` can show."""
        self._tools = frozenset(names)

    def tool_label(self, name: str) -> str:
        return name if name in self._tools else UNKNOWN

    def sent(self, principal: Principal, *, tools_list: list[dict[str, Any]], flat_bytes: int) -> None:
        """A ``tools/list`` answer, against a flat listing of the caller's visible catalog."""
        role = _role(principal)
        size = _bytes(tools_list)
        self.surface.labels(role).inc(size / 4)
        self.flat.labels(role).inc(flat_bytes / 4)
        self.savings.add(surface=size, flat=flat_bytes)

    def searched(self, principal: Principal, response: dict[str, Any]) -> None:
        self.searches.labels("non_empty" if response.get("results") else "empty").inc()
        size = _bytes(response)
        self.surface.labels(_role(principal)).inc(size / 4)
        self.savings.add(surface=size, flat=0)

    @contextmanager
    def call(self, tool: str) -> Iterator[_Outcome]:
        label = self.tool_label(tool)
        outcome = _Outcome()
        started = time.perf_counter()
        try:
            yield outcome
        except anyio.get_cancelled_exc_class():
            outcome.error("cancelled")  # the caller cancelled, not a failure of ours
            raise
        except BaseException:
            outcome.error("internal_error")
            raise
        finally:
            # the call's trace id beside its latency (an exemplar, in the OpenMetrics text)
            self.latency.labels(label).observe(time.perf_counter() - started, tracing.exemplar())
            self.requests.labels(label, outcome.code).inc()
            if outcome.code in ("upstream_error", "upstream_timeout"):
                self.upstream_failures.labels(outcome.code).inc()

    def render(self, openmetrics_text: bool = False) -> bytes:
        """The exposition text; its size is bounded by the closed label sets above.

        ``openmetrics_text``: the OpenMetrics format, the one that carries exemplars (the trace id
        of a latency observation, when traces are on); Prometheus asks for it in ``Accept``."""
        if openmetrics_text:
            return bytes(openmetrics.generate_latest(self.registry))  # type: ignore[no-untyped-call]
        return generate_latest(self.registry)


def _role(principal: Principal) -> str:
    return principal.role if principal.role in ROLES else UNKNOWN
