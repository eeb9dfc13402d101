"""toolcrib as the OAuth 2.1 authorization server of its own /mcp (R-7.7, R-7.9, #22).

The client is the MCP SDK's ``OAuthClientProvider`` (discovery from /mcp's 401, registration,
PKCE, refresh); the browser step goes through the gateway's real pages (personal-token sign-in,
the consent form) with an httpx2 client holding cookies; the upstream is the fixture MCP server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import select, update

from tests.conftest import Process
from tests.e2e.mcpclient import gateway_payload
from tests.e2e.oauth_person import MemoryStorage, Person, sdk_client, sdk_provider
from tests.e2e.org import Org, names_of, organization, rpc
from tests.principals import OPERATOR
from toolcrib.gateway.identity import members
from toolcrib.store.tables import audit, grants
from toolcrib.store.tables import members as members_table

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@asynccontextmanager
async def org(tmp_path: Path, upstream: Process, **values: Any) -> AsyncIterator[Org]:
    async with organization(tmp_path, upstream, semantic=False, **values) as o:
        yield o


async def connect_with_oauth(o: Org, person: Person, storage: MemoryStorage) -> dict[str, Any]:
    """The SDK client's whole flow, then one search over /mcp with the grant it got."""
    async with person, sdk_client(o.base, sdk_provider(o.base, person, storage)) as client:
        found = gateway_payload(await client.call_tool("search_tools", {"query": "add numbers", "limit": 5}))
    return found


async def grant_rows(o: Org, member: str) -> list[Any]:
    async with o.gw.store.db.read() as conn:
        return list((await conn.execute(select(grants).where(grants.c.member == member))).all())


def creds(storage: MemoryStorage) -> dict[str, str]:
    """The client's credentials as the SDK registered them (``client_secret_post``)."""
    assert storage.client is not None
    return {"client_id": storage.client.client_id or "", "client_secret": storage.client.client_secret or ""}


async def token_post(base: str, **form: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(base + "/token", data=form)


async def test_r7_7_sdk_client_discovers_registers_consents_and_searches_with_its_grant(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with org(tmp_path, fixture_http) as o:
        person = Person(o.base, await o.token("alice"))
        storage = MemoryStorage()
        found = await connect_with_oauth(o, person, storage)
        assert "desk__add_numbers" in names_of(found)
        assert storage.tokens is not None
        assert storage.tokens.access_token.startswith("tca_")
        assert storage.client is not None
        assert "Test Client" in person.last_page
        oauth = [g for g in await grant_rows(o, "alice") if g.kind == "oauth"]
        assert len(oauth) == 1
        assert oauth[0].client_id == storage.client.client_id
        assert set(oauth[0].scopes.split()) == {"mcp:tools", "mcp:read", "mcp:write", "mcp:destructive"}
        async with httpx2.AsyncClient() as http:
            resource = (await http.get(o.base + "/.well-known/oauth-protected-resource/mcp")).json()
            meta = (await http.get(o.base + "/.well-known/oauth-authorization-server")).json()
        assert resource["authorization_servers"] == [o.base]
        assert meta["issuer"] == o.base
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["client_id_metadata_document_supported"] is True


async def test_r7_7_refresh_rotates_and_a_reused_refresh_token_revokes_the_whole_grant(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with org(tmp_path, fixture_http) as o:
        storage = MemoryStorage()
        await connect_with_oauth(o, Person(o.base, await o.token("alice")), storage)
        assert storage.tokens is not None
        assert storage.client is not None
        first = storage.tokens.refresh_token or ""
        rotated = await token_post(o.base, grant_type="refresh_token", refresh_token=first, **creds(storage))
        assert rotated.status_code == 200, rotated.text
        second = rotated.json()
        assert second["refresh_token"] != first
        assert second["access_token"].startswith("tca_")
        assert (await rpc(o.base, second["access_token"], "tools/list", {})).status_code == 200
        reused = await token_post(o.base, grant_type="refresh_token", refresh_token=first, **creds(storage))
        assert reused.status_code == 400
        assert reused.json()["error"] == "invalid_grant"
        # the whole family is gone: the newest refresh token and access token too
        newest = await token_post(
            o.base, grant_type="refresh_token", refresh_token=second["refresh_token"], **creds(storage)
        )
        assert newest.json()["error"] == "invalid_grant"
        assert (await rpc(o.base, second["access_token"], "tools/list", {})).status_code == 401
        async with o.gw.store.db.read() as conn:
            rows = (await conn.execute(select(audit).where(audit.c.kind == "admin"))).all()
        assert [r.operation for r in rows] == ["oauth.refresh_reused"]


async def test_r7_7_revoking_either_token_revokes_the_grant(tmp_path: Path, fixture_http: Process) -> None:
    async with org(tmp_path, fixture_http) as o:
        storage = MemoryStorage()
        await connect_with_oauth(o, Person(o.base, await o.token("alice")), storage)
        assert storage.tokens is not None
        assert storage.client is not None
        access = storage.tokens.access_token
        async with httpx2.AsyncClient() as http:
            answer = await http.post(o.base + "/revoke", data={"token": access, **creds(storage)})
        assert answer.status_code == 200
        assert (await rpc(o.base, access, "tools/list", {})).status_code == 401
        again = await token_post(
            o.base,
            grant_type="refresh_token",
            refresh_token=storage.tokens.refresh_token or "",
            **creds(storage),
        )
        assert again.json()["error"] == "invalid_grant"


async def test_r7_9_a_suspended_members_grant_stops_on_its_next_call_refresh_included(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with org(tmp_path, fixture_http) as o:
        storage = MemoryStorage()
        await connect_with_oauth(o, Person(o.base, await o.token("alice")), storage)
        assert storage.tokens is not None
        assert storage.client is not None
        assert (await rpc(o.base, storage.tokens.access_token, "tools/list", {})).status_code == 200
        await members.suspend_member(o.gw.store, "alice", await members.operator_principal(o.gw.store))
        assert (await rpc(o.base, storage.tokens.access_token, "tools/list", {})).status_code == 401
        await members.reactivate_member(o.gw.store, "alice", actor=OPERATOR)
        # reactivation does not bring revoked grants back: suspension revoked them all
        assert (await rpc(o.base, storage.tokens.access_token, "tools/list", {})).status_code == 401
        again = await token_post(
            o.base,
            grant_type="refresh_token",
            refresh_token=storage.tokens.refresh_token or "",
            **creds(storage),
        )
        assert again.json()["error"] == "invalid_grant"
        assert all(g.revoked_at is not None for g in await grant_rows(o, "alice"))


async def test_r7_8_a_refresh_applies_the_mapping_again_and_refuses_a_member_mapped_to_no_role(
    tmp_path: Path, fixture_http: Process
) -> None:
    """At every refresh the member is checked again (``idp.refresh_member``): one whose identity
    provider's groups now map to no role (guest, not pinned) gets no new tokens."""
    async with org(tmp_path, fixture_http) as o:
        storage = MemoryStorage()
        await connect_with_oauth(o, Person(o.base, await o.token("alice")), storage)
        assert storage.tokens is not None
        first = storage.tokens.refresh_token or ""
        renewed = await token_post(o.base, grant_type="refresh_token", refresh_token=first, **creds(storage))
        assert renewed.status_code == 200, renewed.text
        async with o.gw.store.db.begin() as conn:  # as a sign-in that found no mapped group left it
            await conn.execute(
                update(members_table)
                .where(members_table.c.name == "alice")
                .values(source="oidc", role="guest")
            )
        refused = await token_post(
            o.base,
            grant_type="refresh_token",
            refresh_token=renewed.json()["refresh_token"],
            **creds(storage),
        )
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_grant"
