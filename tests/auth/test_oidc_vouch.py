"""An OAuth grant made through the identity provider is re-checked at the provider at each refresh
(R-7.11, R-7.8), end to end: npm's ``oidc-provider`` on node, a real gateway on loopback, a browser
that signs in at the provider, consents for an OAuth client on the gateway's ``/auth`` pages and
hands the code to the client, which exchanges and refreshes it at ``/token``; on SQLite and on
PostgreSQL. The provider changes the person's groups, forgets them, or stops answering."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from sqlalchemy import select
from tests.auth.oidc_provider import provider, signing_keys, to_callback
from tests.auth.test_oidc_signin import Live, World, browser, live
from tests.conftest import free_port
from tests.e2e.oauth_person import REDIRECT, Person, authorize_url, pkce, query_of, register

from toolcrib.auth.oidc import OIDCClient, OIDCConfig
from toolcrib.gateway.identity import members
from toolcrib.store import identities, idp_vouches
from toolcrib.store.tables import grants

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

BOB = "bob@example.com"
HOUR = 3600.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("oidc-vouch")
    port = free_port()
    keys = signing_keys(folder)
    with provider(folder, f"http://127.0.0.1:{port}/auth/oidc/callback", jwks=keys) as idp:
        yield World(idp, port, keys, folder)


@pytest.fixture
def bob_an_admin(world: World) -> Iterator[None]:
    world.idp.set_groups(BOB, ["tc-admins", "staff"])
    yield
    world.idp.restore()


class Clock:
    """The gateway's clock, moved on by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Client:
    """An OAuth client of the gateway whose person signs in at the identity provider."""

    def __init__(self, lv: Live, http: httpx2.AsyncClient) -> None:
        self.lv, self.http = lv, http
        self.client_id = ""
        self.refresh_token = ""

    async def grant(self, world: World, email: str) -> str:
        """Sign in at the provider, consent, exchange the code: the access token."""
        back = await to_callback(
            self.http, f"{self.lv.base}/auth/oidc/start?next=/auth/grants", email, world.callback
        )
        signed = await self.http.get(back)
        assert signed.status_code == 303, signed.text[:300]
        self.client_id = (await register(self.http, self.lv.base))["client_id"]
        verifier, challenge = pkce()
        person = Person(self.lv.base, token="-", http=self.http)
        answer = await person.authorize(authorize_url(self.lv.base, self.client_id, challenge))
        assert answer.status_code == 302, answer.text[:300]
        form = {
            "grant_type": "authorization_code", "code": query_of(answer.headers["location"])["code"],
            "code_verifier": verifier, "client_id": self.client_id, "redirect_uri": REDIRECT,
        }  # fmt: skip
        tokens = await self.http.post(self.lv.base + "/token", data=form)
        assert tokens.status_code == 200, tokens.text
        self.refresh_token = tokens.json()["refresh_token"]
        return str(tokens.json()["access_token"])

    async def refresh(self) -> httpx2.Response:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self.refresh_token,
            "client_id": self.client_id,
        }
        answer = await self.http.post(self.lv.base + "/token", data=form)
        if answer.status_code == 200:
            self.refresh_token = answer.json()["refresh_token"]
        return answer


async def role_of(lv: Live, name: str) -> str | None:
    found = await identities.get_identity(lv.gw.store.db, name)
    return found.role if found else None


async def oauth_grant_revoked(lv: Live, name: str) -> bool:
    async with lv.gw.store.db.read() as conn:
        rows = (
            await conn.execute(
                select(grants.c.revoked_at).where(grants.c.member == name, grants.c.kind == "oauth")
            )
        ).all()
    assert len(rows) == 1
    return rows[0].revoked_at is not None


def refused(answer: httpx2.Response) -> str:
    assert answer.status_code == 400, answer.text
    return str(answer.json()["error"])


@pytest.mark.usefixtures("bob_an_admin")
async def test_r7_11_leaving_the_admin_group_at_the_provider_remaps_the_grant_at_its_next_refresh(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path, signin_per_minute=10_000) as lv, browser() as http:
        client = Client(lv, http)
        await client.grant(world, BOB)
        assert await role_of(lv, BOB) == "admin"
        vouch = await idp_vouches.get_vouch(lv.gw.store.db, BOB)
        assert vouch is not None
        assert vouch.refresh_sealed  # the provider's refresh token, kept sealed
        assert "offline_access" not in vouch.refresh_sealed

        world.idp.set_groups(BOB, ["staff"])  # the provider removes Bob from tc-admins
        assert (await client.refresh()).status_code == 200
        assert await role_of(lv, BOB) == "member"  # re-mapped down at the refresh, not at a sign-in

        world.idp.set_groups(BOB, [])  # and from every mapped group
        assert refused(await client.refresh()) == "invalid_grant"
        assert await role_of(lv, BOB) == "guest"
        assert await oauth_grant_revoked(lv, BOB)
        assert refused(await client.refresh()) == "invalid_grant"


@pytest.mark.usefixtures("bob_an_admin")
async def test_r7_8_a_role_an_admin_pinned_survives_the_providers_groups_at_refresh(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path, signin_per_minute=10_000) as lv, browser() as http:
        client = Client(lv, http)
        await client.grant(world, BOB)
        owner = await members.operator_principal(lv.gw.store)
        await members.set_role(lv.gw.store, BOB, "admin", owner)  # pinned
        world.idp.set_groups(BOB, [])
        assert (await client.refresh()).status_code == 200
        assert await role_of(lv, BOB) == "admin"
        world.idp.remove(BOB)  # a pinned role does not outlive the person at the provider
        assert refused(await client.refresh()) == "invalid_grant"


@pytest.mark.usefixtures("bob_an_admin")
async def test_r7_11_a_person_the_provider_removed_loses_the_grant_at_its_next_refresh(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path, signin_per_minute=10_000) as lv, browser() as http:
        client = Client(lv, http)
        await client.grant(world, BOB)
        assert (await client.refresh()).status_code == 200  # the provider vouches, and rotates its token
        world.idp.remove(BOB)
        assert refused(await client.refresh()) == "invalid_grant"
        assert await oauth_grant_revoked(lv, BOB)
        assert await idp_vouches.get_vouch(lv.gw.store.db, BOB) is None  # nothing of theirs is kept


class NoIdTokenAtRefresh(httpx2.AsyncBaseTransport):
    """The network to the real provider, dropping the ID token from its refresh answers (a provider
    that sends none at a refresh): the userinfo endpoint must then say who the person is."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.userinfo_calls = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        self.userinfo_calls += request.url.path.endswith("/me")
        if request.method != "POST" or b"grant_type=refresh_token" not in request.content:
            return response
        await response.aread()
        answer = json.loads(response.content)
        answer.pop("id_token", None)
        return httpx2.Response(response.status_code, json=answer)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.usefixtures("bob_an_admin")
async def test_r7_11_without_an_id_token_at_refresh_the_providers_userinfo_remaps_the_role(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path, signin_per_minute=10_000) as lv, browser() as http:
        s = lv.gw.settings
        assert s.oidc_issuer
        assert s.oidc_client_id
        config = OIDCConfig(
            s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, s.oidc_scopes, world.callback
        )
        network = NoIdTokenAtRefresh()
        lv.app.state.oidc = OIDCClient(config, clock=lv.gw.store.clock, transport=network)
        client = Client(lv, http)
        await client.grant(world, BOB)
        world.idp.set_groups(BOB, ["staff"])
        assert (await client.refresh()).status_code == 200
        assert network.userinfo_calls == 1
        assert await role_of(lv, BOB) == "member"
        world.idp.set_groups(BOB, [])
        assert refused(await client.refresh()) == "invalid_grant"
        assert await oauth_grant_revoked(lv, BOB)


async def _unreachable_bound(world: World, tmp_path: Path, *, refresh_tokens: bool) -> None:
    """A provider of its own, stopped once Bob has his grant: the grant refreshes for
    ``TOOLCRIB_OIDC_VOUCH_SECONDS`` after the provider last vouched, and not past it."""
    clock = Clock()
    with provider(
        world.folder / f"down-{refresh_tokens}",
        world.callback,
        jwks=world.keys,
        refresh_tokens=refresh_tokens,
    ) as idp:
        idp.set_groups(BOB, ["tc-admins", "staff"])
        mine = World(idp, world.port, world.keys, world.folder)
        async with live(mine, tmp_path, clock=clock, signin_per_minute=10_000) as lv, browser() as http:
            client = Client(lv, http)
            await client.grant(mine, BOB)
            vouch = await idp_vouches.get_vouch(lv.gw.store.db, BOB)
            assert vouch is not None
            assert (vouch.refresh_sealed is not None) is refresh_tokens
            if refresh_tokens:
                idp.stop()  # without a token to ask with, the provider's being up changes nothing
            clock.now = vouch.vouched_at + 0.5 * HOUR
            assert (await client.refresh()).status_code == 200
            assert await role_of(lv, BOB) == "admin"
            clock.now = vouch.vouched_at + HOUR + 1
            assert refused(await client.refresh()) == "invalid_grant"
            assert await oauth_grant_revoked(lv, BOB)


async def test_r7_11_provider_unreachable_the_grant_refreshes_within_the_bound_and_not_past_it(
    world: World, tmp_path: Path
) -> None:
    await _unreachable_bound(world, tmp_path, refresh_tokens=True)


async def test_r7_11_provider_gave_no_refresh_token_the_grant_ends_when_the_bound_passes_since_sign_in(
    world: World, tmp_path: Path
) -> None:
    await _unreachable_bound(world, tmp_path, refresh_tokens=False)
