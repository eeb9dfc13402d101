"""#24, R-14.2: what turns traces on, what stays unloaded without them, and what a span may carry.

The end-to-end side (a real collector, real upstreams) is ``tests/e2e/test_traces.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.conftest import ROOT, env_for
from toolcrib import tracing
from toolcrib.errors import UpstreamError
from toolcrib.otlp import Tracing, WithoutText
from toolcrib.web.tracing import route_of


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, None),
        ({"OTEL_SERVICE_NAME": "x", "OTEL_BSP_SCHEDULE_DELAY": "100"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, None),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, None),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, None),
        ({"OTEL_TRACES_EXPORTER": "zipkin,otlp"}, "otlp"),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, None),
    ],
)
def test_only_the_standard_exporter_variables_turn_traces_on(
    environ: dict[str, str], wanted: str | None
) -> None:
    assert tracing.wanted_exporter(environ) == wanted


def _without_otel() -> dict[str, str]:
    env = env_for()
    return {k: v for k, v in env.items() if not k.startswith("OTEL_")}


def test_without_otel_variables_neither_the_cli_nor_the_app_loads_the_sdk(tmp_path: os.PathLike[str]) -> None:
    """``toolcrib --help`` loads no OpenTelemetry at all; the served app loads only the API the MCP
    SDK itself imports, never the SDK, the exporter or toolcrib's set-up of them."""
    probe = (
        "import json, sys\n"
        "import toolcrib.cli.main\n"
        "cli = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
        "from toolcrib import tracing\n"
        "from toolcrib.settings import Settings\n"
        "from toolcrib.web.app import create_app\n"
        f"create_app(Settings(database_url='sqlite:///{tmp_path}/t.db'))\n"
        "heavy = ('opentelemetry.sdk', 'opentelemetry.exporter', 'opentelemetry.proto', 'toolcrib.otlp')\n"
        "app = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "print(json.dumps({'cli': cli, 'app': app, 'on': tracing.enabled(),\n"
        "                  'nothing': tracing.span('x') is tracing.NOTHING}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=_without_otel(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == {"cli": [], "app": [], "on": False, "nothing": True}


def _live() -> tuple[Tracing, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(WithoutText(memory)))
    return Tracing(provider), memory


def test_a_failed_span_says_its_error_code_never_the_exception_text() -> None:
    live, memory = _live()
    with pytest.raises(UpstreamError), live.span("execute_tool", {tracing.TOOL: "t"}, "internal"):
        raise UpstreamError("desk: refused client sk-live-abcdef123456")
    [span] = memory.get_finished_spans()
    assert span.attributes == {
        tracing.TOOL: "t",
        tracing.OUTCOME: "upstream_error",
        tracing.ERROR_CODE: "upstream_error",
        "error.type": "upstream_error",
    }
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description is None
    assert span.events == ()


def test_spans_leave_without_status_text_or_exception_events() -> None:
    """The MCP SDK's client span puts an upstream's error message in its status; it can quote a
    credential, so no span's status description or exception event leaves the process."""
    live, memory = _live()
    tracer = live._tracer
    with tracer.start_as_current_span("MCP send tools/call x") as span:
        span.set_status(StatusCode.ERROR, "refused client sk-live-abcdef123456")
        span.record_exception(ValueError("sk-live-abcdef123456"))
        span.add_event("kept", {"n": 1})
    [sent] = memory.get_finished_spans()
    assert sent.status.status_code == StatusCode.ERROR
    assert sent.status.description is None
    assert [e.name for e in sent.events] == ["kept"]


def test_an_outcome_marks_the_span_and_children_nest() -> None:
    live, memory = _live()
    with live.span("execute_tool", None, "internal") as outer:
        with live.span("upstream tools/call t", None, "client"):
            assert live.in_span()
            exemplar = live.exemplar()
        outer.outcome("tool_error")
    inner, top = memory.get_finished_spans()
    assert inner.parent is not None
    assert inner.parent.span_id == top.context.span_id
    assert exemplar == {
        "trace_id": format(top.context.trace_id, "032x"),
        "span_id": format(inner.context.span_id, "016x"),
    }
    assert top.attributes is not None
    assert top.attributes[tracing.OUTCOME] == "tool_error"
    assert top.status.status_code == StatusCode.ERROR
    assert not live.in_span()


def test_an_incoming_traceparent_is_the_server_spans_parent() -> None:
    live, memory = _live()
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    with live.span("POST /mcp", None, "server", carrier=carrier):
        pass
    [span] = memory.get_finished_spans()
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == "b7ad6b7169203331"


def test_a_hostile_traceparent_starts_a_trace_of_its_own() -> None:
    live, memory = _live()
    with live.span("POST /mcp", None, "server", carrier={"traceparent": "00-" + "z" * 5000}):
        pass
    [span] = memory.get_finished_spans()
    assert span.parent is None


def test_request_spans_are_named_by_the_first_segment_of_the_path() -> None:
    assert route_of("/mcp") == "/mcp"
    assert route_of("/api/members/list") == "/api"
    assert route_of("/") == "/"
    assert route_of("/" + "a" * 500) == "/" + "a" * 40


def test_a_step_is_no_span_but_names_the_database_spans_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    live, memory = _live()
    monkeypatch.setattr(tracing, "_live", live)
    with tracing.child_span("db.transaction"):  # outside any traced call: no span
        pass
    with tracing.span("execute_tool"):
        with (
            tracing.step("execute.audit_open"),
            tracing.child_span("db.transaction", {"db.system.name": "sqlite"}),
        ):
            pass
        with tracing.child_span("db.transaction"):
            pass
    first, second, top = memory.get_finished_spans()
    assert [s.name for s in (first, second, top)] == ["db.transaction", "db.transaction", "execute_tool"]
    assert first.attributes == {"db.system.name": "sqlite", tracing.STEP: "execute.audit_open"}
    assert second.attributes is not None
    assert tracing.STEP not in second.attributes
