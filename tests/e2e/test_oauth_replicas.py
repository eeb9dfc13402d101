"""A grant issued through one gateway process works on another on the same database (R-7.7, R-15.2).

Each test runs on SQLite and on a real PostgreSQL (``on_each_store``): the grant is issued by an
in-process gateway (the browser step through its real pages), then used and refreshed at a
``toolcrib serve`` process on the same database, and a reuse at the first is seen by the second.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest

from tests.conftest import start_gateway
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.oauth_person import REDIRECT, Person, authorize_url, pkce, query_of, register
from tests.e2e.org import rpc
from tests.principals import OPERATOR
from toolcrib.gateway.identity import members

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

SEARCH = {"name": "search_tools", "arguments": {"query": "add numbers"}}


async def test_r7_7_a_grant_issued_by_one_process_is_used_refreshed_and_revoked_on_another(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, semantic=False)
    async with open_gateway(settings) as gw, serve(gw) as first, httpx2.AsyncClient(timeout=30) as http:
        await owner_token(gw)
        await members.add_member(gw.store, "rosa", "member", actor=OPERATOR)
        _, pat = await members.create_token(gw.store, "rosa", "mcp:tools mcp:read", actor=OPERATOR)
        client = await register(http, first)
        verifier, challenge = pkce()
        async with Person(first, pat) as person:
            back = await person.authorize(authorize_url(first, client["client_id"], challenge))
        assert back.status_code == 302, back.text
        code = query_of(back.headers["location"])["code"]
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
        issued = (
            await http.post(
                first + "/token", data={**form, "client_id": client["client_id"], "redirect_uri": REDIRECT}
            )
        ).json()
        second = await anyio.to_thread.run_sync(
            lambda: start_gateway(
                settings.database_url,
                {"TOOLCRIB_SEMANTIC": "false", **_key(settings.secret_key)},
                log_path=tmp_path / "second.log",
            )
        )
        try:
            found = await rpc(second.url, issued["access_token"], "tools/call", SEARCH)
            assert found.status_code == 200, found.text
            assert not found.json()["result"]["isError"]
            refresh = {"grant_type": "refresh_token", "client_id": client["client_id"]}
            renewed = await http.post(
                second.url + "/token", data={**refresh, "refresh_token": issued["refresh_token"]}
            )
            assert renewed.status_code == 200, renewed.text
            fresh = renewed.json()["access_token"]
            assert (await rpc(first, fresh, "tools/list", {})).status_code == 200
            reused = await http.post(
                first + "/token", data={**refresh, "refresh_token": issued["refresh_token"]}
            )
            assert reused.json()["error"] == "invalid_grant"
            assert (await rpc(second.url, fresh, "tools/list", {})).status_code == 401
        finally:
            await anyio.to_thread.run_sync(second.stop)


def _key(secret: str | None) -> dict[str, str]:
    return {"TOOLCRIB_SECRET_KEY": secret} if secret else {}
