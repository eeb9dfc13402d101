"""Sign-in at a real OpenID Provider (R-7.7) and members from its groups (R-7.8), end to end: npm's
``oidc-provider`` on node, a real gateway on loopback, a browser's HTTP client through the
provider's own sign-in and consent pages; on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from tests.auth.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    OTHER_CLIENT_ID,
    ROLE_MAP,
    Provider,
    direct_id_token,
    provider,
    signing_keys,
    to_callback,
)
from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, owner_token, settings_for

from toolcrib.auth.oidc import OIDCClient, OIDCConfig
from toolcrib.errors import SignInRefused
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import idp, members
from toolcrib.store import identities
from toolcrib.store import members as member_store
from toolcrib.web.app import create_app
from toolcrib.web.signin import COOKIE as SIGNIN_COOKIE

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


@dataclass
class World:
    idp: Provider
    port: int
    keys: Path
    folder: Path

    @property
    def callback(self) -> str:
        return f"http://127.0.0.1:{self.port}/auth/oidc/callback"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("oidc")
    port = free_port()
    keys = signing_keys(folder)
    with provider(folder, f"http://127.0.0.1:{port}/auth/oidc/callback", jwks=keys) as idp:
        yield World(idp, port, keys, folder)


@pytest.fixture
def reset_groups(world: World) -> Iterator[None]:
    yield
    for email in ("ann@example.com", "bob@example.com"):
        world.idp.set_groups(email, ["tc-admins", "staff"] if email.startswith("ann") else ["staff"])


@dataclass
class Live:
    gw: Gateway
    app: Starlette
    base: str


@asynccontextmanager
async def live(
    world: World, tmp_path: Path, *, clock: Callable[[], float] | None = None, **values: Any
) -> AsyncIterator[Live]:
    """A gateway on the port the provider knows, configured with it; the owner initialized."""
    options = {
        "oidc_issuer": world.idp.issuer, "oidc_client_id": CLIENT_ID, "oidc_client_secret": CLIENT_SECRET,
        "oidc_scopes": "openid email groups", "oidc_role_map": ROLE_MAP, "port": world.port, **values,
    }  # fmt: skip
    async with open_gateway(settings_for(tmp_path, **options), clock=clock) as gw:
        if not await member_store.list_members(gw.store.db):
            await owner_token(gw)
        app = create_app(gw.settings, gateway=gw)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=world.port, log_level="warning"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            with anyio.fail_after(20):
                while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                    await anyio.sleep(0.02)
            try:
                yield Live(gw, app, f"http://127.0.0.1:{world.port}")
            finally:
                server.should_exit = True


def browser() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=30, follow_redirects=False)


async def sign_in(world: World, live_gw: Live, email: str, next_path: str = "/admin/") -> httpx2.Response:
    """A new browser signs in as ``email``; the gateway's answer at the callback."""
    async with browser() as http:
        back = await to_callback(
            http, f"{live_gw.base}/auth/oidc/start?next={next_path}", email, world.callback
        )
        return await http.get(back)


def error_of(page: httpx2.Response) -> tuple[str, str]:
    """The (error, reason) a refusal page names."""
    import re

    found = re.search(r'<p id="error"><code>([\w]+)</code> \(<code>([\w]+)</code>\)', page.text)
    assert found, page.text[:400]
    return found[1], found[2]


async def grants_of(gw: Gateway, name: str) -> list[member_store.GrantRow]:
    return await member_store.list_grants(gw.store.db, name)


# --- who becomes a member, with which role -------------------------------------------------


async def test_r7_8_first_sign_in_creates_the_member_with_the_role_its_group_maps_to(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path) as lv:
        answer = await sign_in(world, lv, "ann@example.com", "/mcp-clients/done")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/mcp-clients/done"
        assert SIGNIN_COOKIE in answer.headers["set-cookie"]
        ann = await identities.get_identity(lv.gw.store.db, "ann@example.com")
        assert ann is not None
        assert (ann.role, ann.source, ann.email, ann.subject, ann.issuer) == (
            "admin", "oidc", "ann@example.com", "ann@example.com", world.idp.issuer,
        )  # fmt: skip
        (grant,) = await grants_of(lv.gw, "ann@example.com")
        assert grant.kind == "session"
        assert "mcp:write" in grant.scopes
        assert grant.expires_at is not None
        assert 7.9 * 3600 < grant.expires_at - time.time() <= 8 * 3600
        assert (await sign_in(world, lv, "bob@example.com")).status_code == 200
        bob = await identities.get_identity(lv.gw.store.db, "bob@example.com")
        assert bob is not None
        assert bob.role == "member"


async def test_r7_8_unmapped_person_gets_no_member_no_grant_and_a_page_saying_why(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path) as lv:
        page = await sign_in(world, lv, "eve@example.com")
        assert page.status_code == 403
        assert error_of(page) == ("access_denied", "no_role")
        assert "None of your groups" in page.text
        assert "toolcrib_admin=" not in page.headers.get("set-cookie", "")
        assert await identities.get_identity(lv.gw.store.db, "eve@example.com") is None
        assert await grants_of(lv.gw, "eve@example.com") == []
    async with live(world, tmp_path, oidc_default_role="auditor") as lv:
        assert (await sign_in(world, lv, "eve@example.com")).status_code == 200
        eve = await identities.get_identity(lv.gw.store.db, "eve@example.com")
        assert eve is not None
        assert eve.role == "auditor"


async def test_r7_8_another_domain_and_an_unverified_email_are_refused(world: World, tmp_path: Path) -> None:
    async with live(world, tmp_path, oidc_allowed_domains=["example.com"]) as lv:
        page = await sign_in(world, lv, "mallory@other.org")
        assert page.status_code == 403
        assert error_of(page) == ("access_denied", "domain_not_allowed")
        page = await sign_in(world, lv, "carol@example.com")
        assert page.status_code == 403
        assert error_of(page) == ("access_denied", "email_unverified")
        assert [m.name for m in await member_store.list_members(lv.gw.store.db)] == ["owner"]
        assert (await sign_in(world, lv, "bob@example.com")).status_code == 200


@pytest.mark.usefixtures("reset_groups")
async def test_r7_8_signing_in_again_remaps_the_role_up_and_down_unless_pinned(
    world: World, tmp_path: Path
) -> None:
    async def role() -> str | None:
        found = await identities.get_identity(lv.gw.store.db, "bob@example.com")
        return found.role if found else None

    async with live(world, tmp_path) as lv:
        owner = await members.operator_principal(lv.gw.store)
        await sign_in(world, lv, "bob@example.com")
        assert await role() == "member"
        world.idp.set_groups("bob@example.com", ["staff", "tc-admins"])
        await sign_in(world, lv, "bob@example.com")
        assert await role() == "admin"
        world.idp.set_groups("bob@example.com", [])
        page = await sign_in(world, lv, "bob@example.com")
        assert error_of(page) == ("access_denied", "no_role")
        assert await role() == "guest"  # re-mapped down: the grants it holds reach nothing
        with pytest.raises(SignInRefused) as refused:  # and the authorization server's refresh stops
            await idp.refresh_member(lv.gw, "bob@example.com")
        assert refused.value.reason == "no_role"
        world.idp.set_groups("bob@example.com", ["staff"])
        await members.set_role(lv.gw.store, "bob@example.com", "auditor", owner)  # an admin pins it
        assert (await sign_in(world, lv, "bob@example.com")).status_code == 200
        assert await role() == "auditor"
        await members.set_role(lv.gw.store, "bob@example.com", "auditor", owner, pinned=False)
        await sign_in(world, lv, "bob@example.com")
        assert await role() == "member"


async def test_r7_8_suspended_or_removed_member_is_refused_and_gets_no_grant(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path) as lv:
        owner = await members.operator_principal(lv.gw.store)
        await sign_in(world, lv, "bob@example.com")
        assert (await idp.refresh_member(lv.gw, "bob@example.com")).role == "member"  # at a refresh
        await members.suspend_member(lv.gw.store, "bob@example.com", owner)
        with pytest.raises(SignInRefused) as refused:
            await idp.refresh_member(lv.gw, "bob@example.com")
        assert (refused.value.error, refused.value.reason) == ("access_denied", "member_suspended")
        page = await sign_in(world, lv, "bob@example.com")
        assert page.status_code == 403
        assert error_of(page) == ("access_denied", "member_suspended")
        await members.remove_member(lv.gw.store, "bob@example.com", owner)
        page = await sign_in(world, lv, "bob@example.com")
        assert error_of(page) == ("access_denied", "member_removed")
        assert len(await grants_of(lv.gw, "bob@example.com")) == 1  # the first sign-in's, revoked


# --- the flow's own checks -----------------------------------------------------------------


async def test_r7_7_wrong_or_replayed_state_is_refused_as_invalid_request(
    world: World, tmp_path: Path
) -> None:
    async with live(world, tmp_path) as lv, browser() as http:
        back = await to_callback(
            http, f"{lv.base}/auth/oidc/start?next=/admin/", "bob@example.com", world.callback
        )
        page = await http.get(back.replace("state=", "state=x"))
        assert page.status_code == 400
        assert error_of(page) == ("invalid_request", "state_mismatch")
        assert await identities.get_identity(lv.gw.store.db, "bob@example.com") is None

        back = await to_callback(
            http, f"{lv.base}/auth/oidc/start?next=/admin/", "bob@example.com", world.callback
        )
        cookie = http.cookies.get("toolcrib_oidc")
        assert cookie
        assert (await http.get(back)).status_code == 200
        async with browser() as replay:  # the same state and cookie again (another replica, a replay)
            page = await replay.get(back, headers={"cookie": f"toolcrib_oidc={cookie}"})
            assert error_of(page) == ("invalid_request", "state_replayed")
        assert len(await grants_of(lv.gw, "bob@example.com")) == 1

        async with browser() as stranger:  # a callback URL without the browser that started it
            page = await stranger.get(back)
            assert error_of(page) == ("invalid_request", "no_pending_sign_in")


async def test_r7_7_a_code_used_twice_is_refused_as_invalid_grant(world: World, tmp_path: Path) -> None:
    async with live(world, tmp_path) as lv, browser() as http:
        first = await to_callback(
            http, f"{lv.base}/auth/oidc/start?next=/admin/", "bob@example.com", world.callback
        )
        assert (await http.get(first)).status_code == 200
        second = await to_callback(
            http, f"{lv.base}/auth/oidc/start?next=/admin/", "bob@example.com", world.callback
        )
        old_code = first.split("code=")[1].split("&")[0]
        new_code = second.split("code=")[1].split("&")[0]
        page = await http.get(second.replace(new_code, old_code))
        assert page.status_code == 400
        assert error_of(page) == ("invalid_grant", "code_refused")
        assert len(await grants_of(lv.gw, "bob@example.com")) == 1


class SwapIdToken(httpx2.AsyncBaseTransport):
    """The network between the gateway and the real provider, replacing the token endpoint's
    answer: its ID token by ``id_token`` (or its whole body by ``body``)."""

    def __init__(self, *, id_token: str | None = None, body: bytes | None = None) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._id_token, self._body = id_token, body

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if request.method != "POST" or not request.url.path.endswith("/token"):
            return response
        await response.aread()
        if self._body is not None:
            return httpx2.Response(200, content=self._body, headers={"content-type": "text/html"})
        answer = json.loads(response.content)
        answer["id_token"] = self._id_token or _tampered(answer["id_token"])
        return httpx2.Response(response.status_code, json=answer)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _tampered(token: str) -> str:
    """The same ID token with one claim changed and the provider's signature kept."""
    import base64

    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["email"] = "ann@example.com"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{sig}"


async def _refused_with(world: World, lv: Live, transport: httpx2.AsyncBaseTransport) -> tuple[str, str]:
    s = lv.gw.settings
    assert s.oidc_issuer
    assert s.oidc_client_id
    config = OIDCConfig(s.oidc_issuer, s.oidc_client_id, s.oidc_client_secret, s.oidc_scopes, world.callback)
    previous: OIDCClient | None = getattr(lv.app.state, "oidc", None)
    if previous is not None:
        await previous.aclose()
    lv.app.state.oidc = OIDCClient(config, clock=lv.gw.store.clock, transport=transport)
    page = await sign_in(world, lv, "bob@example.com")
    assert page.status_code in (400, 502), page.status_code
    assert await identities.get_identity(lv.gw.store.db, "bob@example.com") is None
    assert await identities.get_identity(lv.gw.store.db, "ann@example.com") is None
    return error_of(page)


async def test_r7_7_id_token_for_another_audience_or_nonce_or_forged_is_refused(
    world: World, tmp_path: Path
) -> None:
    async with browser() as http:
        other_aud = await direct_id_token(
            http, world.idp, client_id=OTHER_CLIENT_ID, nonce="n", email="bob@example.com"
        )
    async with browser() as http:
        other_nonce = await direct_id_token(
            http, world.idp, client_id=CLIENT_ID, nonce="n", email="bob@example.com"
        )
    async with live(world, tmp_path) as lv:
        assert await _refused_with(world, lv, SwapIdToken(id_token=other_aud)) == (
            "invalid_token",
            "wrong_audience",
        )
        assert await _refused_with(world, lv, SwapIdToken(id_token=other_nonce)) == (
            "invalid_token",
            "nonce_mismatch",
        )
        assert await _refused_with(world, lv, SwapIdToken()) == ("invalid_token", "bad_signature")
        garbage = SwapIdToken(body=b"<html>oops</html>")
        assert await _refused_with(world, lv, garbage) == ("server_error", "token_invalid")


async def test_r7_7_id_token_of_another_issuer_is_refused(world: World, tmp_path: Path) -> None:
    with provider(world.folder / "other", world.callback, host="localhost", jwks=world.keys) as other:
        async with browser() as http:
            foreign = await direct_id_token(
                http, other, client_id=CLIENT_ID, nonce="n", email="bob@example.com"
            )
    async with live(world, tmp_path) as lv:  # signed with the same keys: only the issuer differs
        assert await _refused_with(world, lv, SwapIdToken(id_token=foreign)) == (
            "invalid_token",
            "wrong_issuer",
        )


async def test_r7_7_expired_id_token_is_refused(world: World, tmp_path: Path) -> None:
    later = 3 * 3600.0  # the provider's ID tokens last an hour

    async with live(world, tmp_path, clock=lambda: time.time() + later) as lv:
        page = await sign_in(world, lv, "bob@example.com")
        assert page.status_code == 400
        assert error_of(page) == ("invalid_token", "expired")
        assert await identities.get_identity(lv.gw.store.db, "bob@example.com") is None
