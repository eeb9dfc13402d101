"""Prometheus metrics and the surface-size estimate (R-14.1). Token figures are estimates: bytes / 4."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from toolcrib.policy.gates import Principal

__all__ = ["Telemetry"]


def _bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


class _Outcome:
    def __init__(self) -> None:
        self.code = "ok"

    def error(self, code: str) -> None:
        self.code = code


class Telemetry:
    """One registry per app (tests build many apps in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
            "Estimated tokens (bytes/4) of tools/list and search results sent, per member",
            ["member"],
            registry=r,
        )
        self.flat = Counter(
            "toolcrib_flat_listing_estimated_tokens_total",
            "Estimated tokens (bytes/4) a flat listing of the visible catalog would have cost, per member",
            ["member"],
            registry=r,
        )
        self.audit_rows = Gauge(
            "toolcrib_audit_rows_written", "audit rows written by this process", registry=r
        )
        """What a flat listing weighs now; the app points it at the gateway's catalog at start-up."""

    def sent(self, principal: Principal, *, tools_list: list[dict[str, Any]], flat_bytes: int) -> None:
        """A ``tools/list`` answer, against a flat listing of the caller's visible catalog."""
        self.surface.labels(principal.member).inc(_bytes(tools_list) / 4)
        self.flat.labels(principal.member).inc(flat_bytes / 4)

    def searched(self, principal: Principal, response: dict[str, Any]) -> None:
        self.searches.labels("non_empty" if response.get("results") else "empty").inc()
        self.surface.labels(principal.member).inc(_bytes(response) / 4)

    @contextmanager
    def call(self, tool: str) -> Iterator[_Outcome]:
        label = (
            tool if tool.startswith(("search_tools", "execute_tool", "discover", "run_")) else "control_plane"
        )
        outcome = _Outcome()
        started = time.perf_counter()
        try:
            yield outcome
        finally:
            self.latency.labels(label).observe(time.perf_counter() - started)
            self.requests.labels(label, outcome.code).inc()
            if outcome.code in ("upstream_error", "upstream_timeout"):
                self.upstream_failures.labels(outcome.code).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
