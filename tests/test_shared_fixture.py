"""The shared fixture HTTP server (``fixture_http``) is up for every test that uses it, even after a
test before ended it: one test must not fail every later test of its process (#33)."""

from __future__ import annotations

import httpx2

from tests.conftest import RESTARTS, SharedFixtureServer


def test_a_shared_fixture_server_ended_by_a_test_is_up_again_on_its_port(
    fixture_http: SharedFixtureServer,
) -> None:
    url = fixture_http.url
    ended = fixture_http.proc
    ended.kill()
    ended.wait(10)
    assert fixture_http.url == url  # the same port: gateways of a module keep their connection
    assert fixture_http.proc is not ended
    answer = httpx2.get(url.removesuffix("/mcp") + "/", timeout=30)
    assert answer.status_code < 500
    assert "started again" in RESTARTS[-1]
    RESTARTS.pop()  # this test's own doing: the run's summary names only restarts nobody asked for
