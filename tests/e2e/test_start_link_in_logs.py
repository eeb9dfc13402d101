"""The token of an upstream OAuth start link is in no request log line and no span (#32, finding 8).

Attack: the start link (``/admin/oauth/start/{token}``, R-13.6) is the one thing that lets its
person authorize a connection; before, the request log wrote each request's path whole, and the
trace of the request carried it as ``url.path``, so whoever reads the logs or the tracing backend
read the token. Here the gateway is real (served over HTTP, traces on, into memory), the provider
a real OAuth 2.1 server, and the person follows their link all the way to the callback.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.oauth_browser import follow
from tests.fixtures.oauth_upstream import serve_oauth_upstream
from toolcrib import tracing
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.connections.oauth_binding import START_PATH
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.otlp import Tracing, WithoutText

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_the_start_links_token_is_redacted_in_the_request_log_and_the_request_spans_url_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(WithoutText(memory)))
    monkeypatch.setattr(tracing, "_configured", True)  # traces on, as the OTEL_* variables would
    monkeypatch.setattr(tracing, "_live", Tracing(provider))
    caplog.set_level(logging.INFO, logger="toolcrib")
    port = free_port()
    settings = settings_for(tmp_path, semantic=False, port=port)
    async with serve_oauth_upstream() as upstream, open_gateway(settings) as gw, serve(gw, port) as base:
        await owner_token(gw)
        owner = await operator_principal(gw.store)
        row = await connections.add_connection(
            gw, "notes", connector="Notes", url=upstream.mcp_url, oauth=True, actor=owner
        )
        link = row.authorize_url
        assert link is not None
        assert link.startswith(base + START_PATH)
        token = link.removeprefix(base + START_PATH)
        assert (await follow(link)).status_code == 200  # GET and POST of the start page, then the callback
        assert (await connections.get_connection(gw, "notes", owner)).status == "active"

    logged = [r.getMessage() for r in caplog.records if r.name == "toolcrib.access"]
    assert f"operation=GET {START_PATH}*** outcome=200" in "\n".join(logged)  # the lines are there
    assert f"operation=POST {START_PATH}*** outcome=303" in "\n".join(logged)
    assert not [line for line in logged if token in line]
    assert token not in caplog.text
    paths = [str(s.attributes.get("url.path")) for s in memory.get_finished_spans() if s.attributes]
    assert f"{START_PATH}***" in paths  # the request spans are there
    spans = [repr(dict(s.attributes or {})) + s.name for s in memory.get_finished_spans()]
    assert not [span for span in spans if token in span]
