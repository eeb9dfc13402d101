"""The whole story of #22 in one place: an OAuth-only client connects, and the person behind it signs
in at the organization's OpenID Provider (R-7.7, R-7.8, R-7.9).

Real parts: npm's ``oidc-provider`` on node (its own sign-in and consent pages), a gateway served
over loopback with the fixture MCP server connected, the MCP SDK's ``OAuthClientProvider`` doing
discovery, registration, PKCE and the token exchange, and a browser (an httpx2 client with a
cookie jar) posting the real forms: the gateway's sign-in page → "Sign in with …" → the provider →
back to ``/auth/oidc/callback`` → the consent page → the client.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import httpx2
import pytest

from tests.auth.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    ROLE_MAP,
    Provider,
    provider,
    signing_keys,
    to_callback,
)
from tests.conftest import Process, free_port
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import gateway_payload
from tests.e2e.oauth_person import MemoryStorage, Person, sdk_client, sdk_provider
from tests.e2e.org import names_of, rpc
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.store import members as member_store

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@dataclass
class World:
    idp: Provider
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("idp")
    port = free_port()
    keys = signing_keys(folder)
    with provider(folder, f"http://127.0.0.1:{port}/auth/oidc/callback", jwks=keys) as idp:
        yield World(idp, port)


@asynccontextmanager
async def gateway(world: World, tmp_path: Path, upstream: Process) -> AsyncIterator[Gateway]:
    """A gateway on the port the provider knows, signing people in there, a server connected."""
    settings = settings_for(
        tmp_path,
        semantic=False,
        port=world.port,
        oidc_issuer=world.idp.issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET,
        oidc_scopes="openid email groups",
        oidc_role_map=ROLE_MAP,
    )
    async with open_gateway(settings) as gw:
        await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Helpdesk", url=upstream.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        async with serve(gw, world.port):
            yield gw


@dataclass
class IdPPerson(Person):
    """A person with no token at all: the gateway's sign-in page sends them to their provider."""

    email: str = ""
    callback: str = ""

    async def sign_in(self, login_url: str) -> httpx2.Response:
        page = await self.http.get(login_url)
        assert page.status_code == 200, page.text
        link = re.search(r'href="(/auth/oidc/start\?next=[^"]+)"', page.text)
        assert link, "the sign-in page offers no identity provider"
        back = await to_callback(
            self.http, urljoin(self.base, html.unescape(link[1])), self.email, self.callback
        )
        return await self.http.get(back)  # the callback signs the person in, then on to the consent


def person(world: World, email: str) -> IdPPerson:
    return IdPPerson(world.base, "", email=email, callback=world.base + "/auth/oidc/callback")


async def test_r7_7_an_oauth_only_client_signs_a_person_in_at_the_idp_and_searches_with_the_grant(
    world: World, tmp_path: Path, fixture_http: Process
) -> None:
    async with gateway(world, tmp_path, fixture_http) as gw:
        storage = MemoryStorage()
        bob = person(world, "bob@example.com")
        async with bob, sdk_client(world.base, sdk_provider(world.base, bob, storage)) as client:
            found = gateway_payload(await client.call_tool("search_tools", {"query": "add two numbers"}))
        assert "desk__add_numbers" in names_of(found)
        assert "Test Client" in bob.last_page  # the consent page named the client
        # the member was created at first sign-in, named by e-mail, with the role "staff" maps to
        member = await member_store.get_member(gw.store.db, "bob@example.com")
        assert member is not None
        assert (member.role, member.status) == ("member", "active")
        oauth = [
            g for g in await member_store.list_grants(gw.store.db, "bob@example.com") if g.kind == "oauth"
        ]
        assert len(oauth) == 1
        # suspension revokes every grant at once; the client's next call is refused
        assert storage.tokens is not None
        access = storage.tokens.access_token
        assert (await rpc(world.base, access, "tools/list", {})).status_code == 200
        await members.suspend_member(gw.store, "bob@example.com", OPERATOR)
        assert (await rpc(world.base, access, "tools/list", {})).status_code == 401


async def test_r7_8_a_person_whose_groups_map_to_no_role_gets_no_member_and_no_grant(
    world: World, tmp_path: Path, fixture_http: Process
) -> None:
    async with gateway(world, tmp_path, fixture_http) as gw:
        storage = MemoryStorage()
        eve = person(world, "eve@example.com")
        with pytest.raises(BaseException):  # noqa: B017, PT011 - the SDK's flow ends without a code
            async with eve, sdk_client(world.base, sdk_provider(world.base, eve, storage)) as client:
                await client.call_tool("search_tools", {"query": "add two numbers"})
        assert await member_store.get_member(gw.store.db, "eve@example.com") is None
        assert storage.tokens is None
        grants = await member_store.list_grants(gw.store.db)
        assert [g for g in grants if g.kind in ("oauth", "session")] == []
