"""R-13.5 through a running gateway: cloud-metadata upstreams are refused on every face (#21, finding 3).

Attack: a member with ``connections:write`` creates a connection whose URL is the cloud metadata
service, spelled plainly, IPv4-mapped, as one decimal number, or by its DNS name; the gateway then
calls it with every sync. Each create must be refused in-band (``invalid_arguments`` at ``/url``,
exit 1 on the command line) with nothing saved and no connection attempted. The connect recorder of
``tests.netguard`` keeps this process (and the CLI subprocess) on loopback whatever the code does,
so the same tests run safely against the commit before the fix, where they fail.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.conftest import PYTHON, ROOT, cli, env_for, free_port, key_env
from tests.e2e.inprocess import open_gateway, owner_token, serve, serve_asgi, settings_for
from tests.e2e.mcpclient import connect, gateway_payload
from tests.netguard import LOG_ENV, Recorder, loopback_only
from tests.principals import OPERATOR
from toolcrib.gateway.connections import upstream_oauth as oauth
from toolcrib.gateway.connections.manage import add_connection, list_connections, refresh_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.store import connections as store

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

METADATA_URLS = (
    "http://169.254.169.254/mcp",
    "http://[::ffff:169.254.169.254]/mcp",
    "http://[::ffff:a9fe:a9fe]/mcp",
    "http://2852039166/mcp",
    "http://metadata.google.internal/mcp",
)


@pytest.fixture
def guard() -> Iterator[Recorder]:
    with loopback_only() as recorder:
        yield recorder


@asynccontextmanager
async def served(tmp_path: Path, **values: Any) -> AsyncIterator[tuple[Gateway, str, str]]:
    settings = settings_for(tmp_path, semantic=False, connect_timeout_seconds=5, **values)
    async with open_gateway(settings) as gw:
        token = await owner_token(gw)
        async with serve(gw) as base:
            yield gw, base, token


async def _nothing_saved(gw: Gateway) -> None:
    assert await store.list_connections(gw.store.db) == []
    assert gw.catalog.connections == {}


async def test_r13_5_connections_create_over_mcp_refuses_every_metadata_url(
    tmp_path: Path, guard: Recorder
) -> None:
    async with served(tmp_path) as (gw, base, token), connect(base, token) as client:
        for i, url in enumerate(METADATA_URLS):
            arguments = {"name": f"meta-{i}", "connector": "Meta", "url": url}
            result = await client.call_tool("toolcrib__connections__create", arguments)
            assert result.is_error, (url, result)
            error = gateway_payload(result)["error"]
            assert error["code"] == "invalid_arguments", (url, error)
            assert [e["pointer"] for e in error["errors"]] == ["/url"], (url, error)
        await _nothing_saved(gw)
    assert guard.outside_loopback() == []
    assert guard.lookups == []


async def test_r13_5_connections_create_over_rest_refuses_every_metadata_url(
    tmp_path: Path, guard: Recorder
) -> None:
    async with served(tmp_path) as (gw, base, token):
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
            for i, url in enumerate(METADATA_URLS):
                body = {"name": f"meta-{i}", "connector": "Meta", "url": url}
                answer = await http.post("/api/connections/create", json=body)
                assert answer.status_code == 400, (url, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "invalid_arguments", (url, error)
                assert [e["pointer"] for e in error["errors"]] == ["/url"], (url, error)
            listed = await http.post("/api/connections/list", json={})
            assert listed.json() == {"result": []}
        await _nothing_saved(gw)
    assert guard.outside_loopback() == []
    assert guard.lookups == []


def test_r13_5_cli_connections_add_of_the_metadata_address_exits_1_and_saves_nothing(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'gw.store.db'}"
    log = tmp_path / "connects.log"
    guarded = [PYTHON, "-c", "from tests.netguard import run_cli; run_cli()"]
    env = env_for({**key_env(db_url), LOG_ENV: str(log), "TOOLCRIB_SEMANTIC": "false"})
    cli(db_url, "init")  # the command line acts as the organization's owner (#21): there is one
    run = [*guarded, "connections", "add", "x", "--connector", "X", "--url", METADATA_URLS[0]]
    added = subprocess.run(
        [*run, "--database", db_url], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert added.returncode == 1, added
    assert "invalid_arguments" in added.stderr, added.stderr
    listed = subprocess.run(
        [*guarded, "connections", "list", "--json", "--database", db_url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed
    assert json.loads(listed.stdout) == []
    attempts = log.read_text().splitlines() if log.exists() else []
    assert [a for a in attempts if not a.startswith("connect 127.")] == [], attempts


# --- at connect time: rebinding and a setting turned on later -----------------------------------------


class Rebinding:
    """A DNS name answering loopback to the first question, the metadata address after that."""

    def __init__(self, first: str = "127.0.0.1") -> None:
        self.first = first
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return [self.first] if len(self.asked) == 1 else ["169.254.169.254"]


async def test_r13_5_a_name_rebound_to_metadata_after_the_create_check_fails_the_sync_without_a_connect(
    tmp_path: Path, guard: Recorder
) -> None:
    from toolcrib.addresses import AddressPolicy  # here: the attack tests above also run on older code

    resolver = Rebinding()
    settings = settings_for(tmp_path, semantic=False, connect_timeout_seconds=5)
    async with open_gateway(settings, addresses=AddressPolicy(resolve=resolver)) as gw:
        row = await add_connection(
            gw, "rebound", connector="Rebound", url="http://rebound.test:9/mcp", actor=OPERATOR
        )
        assert row.status == "error"
        assert row.reason is not None
        assert "rebound.test" in row.reason
        assert "cloud metadata" in row.reason
        assert len(resolver.asked) >= 2  # checked at create, and again when connecting
    assert guard.outside_loopback() == []
    assert guard.connects == []  # not even the loopback answer of the first check was called


async def test_r13_5_deny_private_turned_on_stops_a_loopback_upstream_at_its_next_sync(
    tmp_path: Path, fixture_http: Any, guard: Recorder
) -> None:
    settings = settings_for(tmp_path, semantic=False, connect_timeout_seconds=5)
    async with open_gateway(settings) as gw:
        await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        assert row.status == "active", row.reason
    before = len(guard.connects)
    denied = settings.model_copy(update={"deny_private_addresses": True})
    async with open_gateway(denied) as gw:
        owner = await members.operator_principal(gw.store)
        row = await refresh_connection(gw, "desk", owner)
        assert row.status == "error"
        assert row.reason is not None
        assert "127.0.0.1" in row.reason
        assert "loopback" in row.reason
        assert [r.status for r in await list_connections(gw, owner)] == ["error"]
    assert guard.connects[before:] == []  # refused before any connect


# --- OAuth discovery and redirects --------------------------------------------------------------------


def _oauth_upstream(port: int, authorization_server: str) -> Starlette:
    """An MCP endpoint asking for OAuth whose protected-resource metadata names ``authorization_server``."""
    base = f"http://127.0.0.1:{port}"

    async def mcp(request: Request) -> Response:
        challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'
        return Response(status_code=401, headers={"WWW-Authenticate": challenge})

    async def metadata(request: Request) -> Response:
        return JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [authorization_server]})

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["GET", "POST"]),
            Route("/.well-known/oauth-protected-resource", metadata),
            Route("/.well-known/oauth-protected-resource/mcp", metadata),
        ]
    )


def serving(app: Starlette, port: int) -> AbstractAsyncContextManager[str]:
    return serve_asgi(app, port)


@pytest.mark.parametrize(
    "authorization_server",
    ["http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/", "http://metadata.google.internal/"],
)
async def test_r13_5_oauth_discovery_never_calls_an_authorization_server_at_a_metadata_address(
    tmp_path: Path, guard: Recorder, authorization_server: str
) -> None:
    port = free_port()
    async with serving(_oauth_upstream(port, authorization_server), port) as upstream:
        settings = settings_for(tmp_path, semantic=False, connect_timeout_seconds=5)
        async with open_gateway(settings) as gw:
            row = await add_connection(
                gw, "notes", connector="Notes", url=upstream + "/mcp", oauth=True, actor=OPERATOR
            )
            assert row.status != "active"
            assert row.authorize_url is None  # no flow reached the provider
            await oauth.wait_authorized(gw, "notes")
            row = await store.get_connection(gw.store.db, "notes")
            assert row is not None
            assert row.reason is not None
            assert "does not call" in row.reason, row.reason
    assert guard.outside_loopback() == []
    assert guard.lookups == []
