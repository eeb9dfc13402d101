"""A connection URL's secrets are credentials (R-13.7, R-13.3; #32, finding 5).

Attack: an admin adds ``https://user:password@host/mcp?api_key=KEY``. Before, the URL was stored
whole in ``connections.url`` (anyone with a copy of the database, or a backup, read it) and
``toolcrib export`` wrote it whole into the file meant for git. Now its userinfo and every query
value whose name says credential are sealed with the connection's other credentials, the stored
URL shows them as ``***``, export writes ``${env:…}`` references, and the real URL is put together
only to connect: the fixture server (the real MCP fixture, behind a recorder) still receives them.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from tests.e2e.inprocess import open_gateway, owner_token, serve_asgi, settings_for
from tests.fixtures.fixture_server import build_server
from tests.pg import read_rows
from tests.principals import OPERATOR
from toolcrib.gateway.connections import manage as connections
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.orgfile.service import export_org, plan_file
from toolcrib.store.tables import connections as connections_table

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

PASSWORD = "pw-3f9c2a7e1b"
API_KEY = "KEY-7d41e0c9a2f6"
ENV = {"CRM_URL_USERINFO": f"robot:{PASSWORD}", "CRM_URL_API_KEY": API_KEY}


@asynccontextmanager
async def recorded_fixture() -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """The fixture MCP server over Streamable HTTP on loopback; each request's basic credentials
    and query are recorded (what the upstream received)."""
    app = build_server().streamable_http_app(stateless_http=True, json_response=True)
    seen: list[dict[str, str]] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            basic = (
                base64.b64decode(auth.removeprefix("Basic ")).decode() if auth.startswith("Basic ") else ""
            )
            seen.append({"basic": basic, "query": scope["query_string"].decode()})
        await app(scope, receive, send)

    async with serve_asgi(recording) as base:
        yield base, seen


def _secret_url(base: str) -> str:
    return base.replace("http://", f"http://robot:{PASSWORD}@") + f"/mcp?api_key={API_KEY}&region=eu"


def _assert_none_in(text: str) -> None:
    assert PASSWORD not in text
    assert API_KEY not in text


async def _raw_rows(gw: Gateway) -> str:
    return repr(read_rows(gw.settings.database_url, "SELECT * FROM connections"))


async def test_r13_7_a_url_password_and_api_key_are_sealed_exported_as_references_and_still_connect(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolcrib")
    async with recorded_fixture() as (base, seen), open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await owner_token(gw)
        url = _secret_url(base)
        row = await connections.add_connection(gw, "crm", connector="CRM", url=url, actor=OPERATOR)
        assert row.status == "active", row.reason
        assert seen
        assert all(s == {"basic": f"robot:{PASSWORD}", "query": f"api_key={API_KEY}&region=eu"} for s in seen)

        _assert_none_in(await _raw_rows(gw))  # sealed at rest
        shown = [connections.connection_view(r) for r in await connections.list_connections(gw, OPERATOR)]
        shown.append(connections.connection_view(await connections.get_connection(gw, "crm", OPERATOR)))
        for view in shown:
            _assert_none_in(json.dumps(view))
            assert view["target"].startswith("http://***@127.0.0.1:")
            assert view["target"].endswith("&region=eu")

        exported = await export_org(gw, OPERATOR)
        _assert_none_in(exported)
        assert "url: http://${env:CRM_URL_USERINFO}@127.0.0.1:" in exported
        assert "/mcp?api_key=${env:CRM_URL_API_KEY}&region=eu" in exported
        # The references name the same URL: applying the export changes nothing; a plan shows ***.
        assert (await plan_file(gw, OPERATOR, exported, "org.yaml", environ=ENV))[1] == []
        other = {**ENV, "CRM_URL_API_KEY": "KEY-another-one-42"}
        changes = (await plan_file(gw, OPERATOR, exported, "org.yaml", environ=other))[1]
        lines = "\n".join(c.line() for c in changes)
        assert "url: http://***@127.0.0.1:" in lines
        assert "KEY-another-one-42" not in lines
        _assert_none_in(lines)

        seen.clear()  # an update that leaves the URL as it is connects with its secrets still
        await connections.update_connection(gw, "crm", connector="CRM 2", actor=OPERATOR)
        assert (await connections.refresh_connection(gw, "crm", OPERATOR)).status == "active"
        assert seen
        assert seen[-1]["basic"] == f"robot:{PASSWORD}"
        _assert_none_in(await _raw_rows(gw))
    _assert_none_in("\n".join(r.getMessage() for r in caplog.records if r.name.startswith("toolcrib")))


async def test_r13_7_a_row_stored_before_urls_were_sealed_connects_and_shows_and_exports_no_secret(
    tmp_path: Path,
) -> None:
    async with recorded_fixture() as (base, seen), open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await owner_token(gw)
        url = _secret_url(base)
        await connections.add_connection(gw, "crm", connector="CRM", url=base + "/mcp", actor=OPERATOR)
        async with (
            gw.store.db.begin() as conn
        ):  # the shape of an older row: the whole URL in clear, nothing sealed
            plain = gw.store.box.seal({"env": {}, "headers": {}})
            await conn.execute(
                update(connections_table)
                .where(connections_table.c.name == "crm")
                .values(url=url, secrets=plain)
            )
        seen.clear()
        assert (await connections.refresh_connection(gw, "crm", OPERATOR)).status == "active"
        assert seen
        assert seen[-1]["basic"] == f"robot:{PASSWORD}"
        for view in [
            connections.connection_view(r) for r in await connections.list_connections(gw, OPERATOR)
        ]:
            _assert_none_in(json.dumps(view))
        exported = await export_org(gw, OPERATOR)
        _assert_none_in(exported)
        assert (await plan_file(gw, OPERATOR, exported, "org.yaml", environ=ENV))[1] == []
