"""What an anonymous caller can make the gateway fetch (R-13.7, R-7.10, #32 findings 3, 4, 8).

A client ID metadata document is fetched at anyone's request: ``/authorize?client_id=<URL>`` needs
no sign-in. Each attack is driven through a real gateway served over HTTP, with the documents on
real loopback servers that count what reaches them, and the connect guard of ``tests.netguard``
on: nothing in this file ever opens a connection off loopback, whatever the code under test does
(a private address must be refused before any connect, which the guard's record shows).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.e2e.inprocess import open_gateway, serve, settings_for
from tests.e2e.oauth_person import REDIRECT, authorize_url, pkce, query_of, refused_page, register, serve_app
from tests.netguard import Recorder, loopback_only
from toolcrib.addresses import AddressPolicy
from toolcrib.gateway.core import Gateway
from toolcrib.store.tables import oauth_clients

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def guard() -> Iterator[Recorder]:
    with loopback_only() as recorder:
        yield recorder


@dataclass
class Documents:
    """A loopback server of client ID metadata documents that counts every request it gets."""

    asked: list[str] = field(default_factory=list)
    redirect_to: str = ""

    def app(self) -> Starlette:
        async def document(request: Request) -> Response:
            self.asked.append(request.url.path)
            url = str(request.url)
            return JSONResponse({"client_id": url, "client_name": "Doc", "redirect_uris": [REDIRECT]})

        async def moved(request: Request) -> Response:
            self.asked.append(request.url.path)
            return RedirectResponse(self.redirect_to, 302)

        async def missing(request: Request) -> Response:
            self.asked.append(request.url.path)
            return JSONResponse({"error": "not here"}, 404)

        return Starlette(
            routes=[
                Route("/doc/{name}.json", document),
                Route("/moved.json", moved),
                Route("/missing.json", missing),
            ]
        )


@asynccontextmanager
async def gateway(tmp_path: Path, clock: Any = None, **values: Any) -> AsyncIterator[tuple[Gateway, str]]:
    settings = settings_for(tmp_path, semantic=False, **{"signin_per_minute": 10_000, **values})
    options = {"clock": clock} if clock is not None else {}
    async with open_gateway(settings, **options) as gw, serve(gw) as base:
        yield gw, base


async def clients_stored(gw: Gateway) -> int:
    async with gw.store.db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(oauth_clients))).scalar_one())


# --- finding 3: no redirect, https only, no private address ------------------------------------------


async def test_r13_7_a_metadata_document_answering_a_redirect_is_an_invalid_client_its_target_asked_nothing(
    tmp_path: Path, guard: Recorder
) -> None:
    """The redirect's target is a server that would answer a perfectly good document for the first
    URL: followed, the gateway would GET wherever the redirect points (and accept the client)."""
    first, target = Documents(), Documents()
    _, challenge = pkce()
    async with (
        gateway(tmp_path, oauth_allow_loopback_client_documents=True) as (gw, base),
        serve_app(first.app()) as first_base,
        serve_app(target.app()) as target_base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        client_id = first_base + "/moved.json"
        first.redirect_to = target_base + "/doc/anything.json"
        refused = await http.get(authorize_url(base, client_id, challenge))
        assert refused_page(refused) == "invalid_client"
        assert "(document_redirected)" in refused.text
        assert first.asked == ["/moved.json"]
        assert target.asked == []  # the redirect's target received no request
        assert await clients_stored(gw) == 0
    assert guard.outside_loopback() == []


@pytest.mark.parametrize(
    ("spelled", "why"),
    [
        ("http://127.0.0.1:{port}/doc/a.json", "document_not_https"),
        ("http://localhost:{port}/doc/a.json", "document_not_https"),
        ("https://127.0.0.1:{port}/doc/a.json", "document_address_refused"),
        ("https://[::ffff:127.0.0.1]:{port}/doc/a.json", "document_address_refused"),
        ("https://[::1]:{port}/doc/a.json", "document_address_refused"),
    ],
)
async def test_r13_7_a_loopback_or_http_metadata_document_is_refused_without_the_development_setting(
    tmp_path: Path, guard: Recorder, spelled: str, why: str
) -> None:
    docs = Documents()
    _, challenge = pkce()
    async with (
        gateway(tmp_path) as (gw, base),
        serve_app(docs.app()) as docs_base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        client_id = spelled.format(port=docs_base.rsplit(":", 1)[1])
        refused = await http.get(authorize_url(base, client_id, challenge))
        assert refused_page(refused) == "invalid_client"
        assert f"({why})" in refused.text
        assert docs.asked == []
        assert await clients_stored(gw) == 0
    assert guard.outside_loopback() == []


async def test_r13_7_the_development_setting_lets_a_loopback_http_document_through(
    tmp_path: Path, guard: Recorder
) -> None:
    docs = Documents()
    _, challenge = pkce()
    async with (
        gateway(tmp_path, oauth_allow_loopback_client_documents=True) as (gw, base),
        serve_app(docs.app()) as docs_base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        answer = await http.get(authorize_url(base, docs_base + "/doc/dev.json", challenge))
        assert answer.status_code == 302, answer.text
        assert answer.headers["location"].startswith(base + "/auth/consent?")
        assert docs.asked == ["/doc/dev.json"]
        assert await clients_stored(gw) == 1
    assert guard.outside_loopback() == []


class PrivateNames:
    """A resolver (the address policy's injectable one) answering private addresses for names."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return {"docs.internal.test": ["10.1.2.3"], "mixed.test": ["93.184.215.14", "192.168.1.9"]}[host]


@pytest.mark.parametrize("loopback_setting", [False, True])
async def test_r13_7_a_private_address_is_refused_before_any_connect_even_with_deny_private_addresses_off(
    tmp_path: Path, guard: Recorder, loopback_setting: bool
) -> None:
    """``deny_private_addresses`` is off (the default): upstream URLs may be private, but a document
    anyone can make the gateway fetch may not; the development setting excepts loopback alone."""
    resolver = PrivateNames()
    settings = settings_for(
        tmp_path,
        semantic=False,
        signin_per_minute=10_000,
        deny_private_addresses=False,
        oauth_allow_loopback_client_documents=loopback_setting,
    )
    urls = [
        "https://docs.internal.test/c.json",  # a name that resolves to 10.1.2.3
        "https://mixed.test/c.json",  # one public answer and one private: refused whole
        "https://10.0.0.5/c.json",
        "https://172.16.0.1/c.json",
        "https://192.168.1.1/c.json",
        "https://100.64.0.1/c.json",
        "https://[fc00::1]/c.json",
        "https://[fe80::1]/c.json",
        "https://169.254.169.254/c.json",
        "https://[::ffff:10.0.0.1]/c.json",
        "https://[::ffff:a9fe:a9fe]/c.json",
    ]
    _, challenge = pkce()
    async with (
        open_gateway(settings, addresses=AddressPolicy(resolve=resolver)) as gw,
        serve(gw) as base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        for url in urls:
            refused = await http.get(authorize_url(base, url, challenge))
            assert refused_page(refused) == "invalid_client", url
            assert "(document_address_refused)" in refused.text, url
        assert await clients_stored(gw) == 0
    assert resolver.asked == ["docs.internal.test", "mixed.test"]  # resolved through the policy
    assert guard.outside_loopback() == []  # refused before any connect
    assert guard.lookups == []


# --- finding 4: only /authorize fetches; /revoke is limited; failures are remembered -----------------


async def test_r7_10_forty_anonymous_revokes_with_distinct_document_urls_fetch_and_store_nothing(
    tmp_path: Path, guard: Recorder
) -> None:
    docs = Documents()
    async with (
        gateway(tmp_path, signin_per_minute=40, oauth_allow_loopback_client_documents=True) as (gw, base),
        serve_app(docs.app()) as docs_base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        answers = [
            await http.post(
                base + "/revoke", data={"token": "tca_x", "client_id": f"{docs_base}/doc/r{i}.json"}
            )
            for i in range(41)
        ]
        assert [a.status_code for a in answers[:40]] == [401] * 40, answers[0].text
        assert {a.json()["error"] for a in answers[:40]} == {"unauthorized_client"}
        assert answers[40].status_code == 429  # /revoke has the per-address limit of /token
        assert answers[40].json()["error"] == "rate_limited"
        token = await http.post(
            base + "/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": "tcr_x",
                "client_id": docs_base + "/doc/t.json",
            },
        )
        assert token.status_code == 401
        assert token.json()["error"] == "invalid_client"
        assert docs.asked == []  # not one fetch
        assert await clients_stored(gw) == 0  # no client row outside the registration bound
    assert guard.outside_loopback() == []


async def test_r13_7_a_failing_document_url_is_fetched_once_however_often_authorize_names_it(
    tmp_path: Path, guard: Recorder
) -> None:
    now = [1_000_000.0]
    docs = Documents()
    _, challenge = pkce()
    async with (
        gateway(tmp_path, clock=lambda: now[0], oauth_allow_loopback_client_documents=True) as (gw, base),
        serve_app(docs.app()) as docs_base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        client_id = docs_base + "/missing.json"
        for _ in range(5):
            refused = await http.get(authorize_url(base, client_id, challenge))
            assert refused_page(refused) == "invalid_client"
            assert "(document_status)" in refused.text
        assert docs.asked == ["/missing.json"]
        now[0] += 301  # remembered a few minutes, then asked again
        assert refused_page(await http.get(authorize_url(base, client_id, challenge))) == "invalid_client"
        assert docs.asked == ["/missing.json", "/missing.json"]
        assert await clients_stored(gw) == 0
    assert guard.outside_loopback() == []


# --- finding 8: no redirect to a URI that is not verified ---------------------------------------------


async def test_rfc9700_an_unknown_client_or_unregistered_redirect_gets_an_error_page_never_a_redirect(
    tmp_path: Path, guard: Recorder
) -> None:
    """RFC 9700 §4.11.2 / RFC 6749 §4.1.2.1: until the client and its redirect URI are verified,
    an error is shown to the person (400, HTML); after that, it goes back to the redirect URI."""
    _, challenge = pkce()
    evil = "https://evil.example/cb"
    async with gateway(tmp_path) as (_, base), httpx2.AsyncClient(timeout=30) as http:
        client = await register(http, base)
        cases = {
            "unknown client": authorize_url(base, "no-such-client", challenge, redirect_uri=evil),
            "unknown client, bad request": authorize_url(
                base, "no-such-client", None, redirect_uri=evil, response_type="token"
            ),
            "no client_id": authorize_url(base, "-", challenge, redirect_uri=evil),
            "unregistered redirect": authorize_url(base, client["client_id"], challenge, redirect_uri=evil),
            "unregistered redirect, bad request": authorize_url(
                base, client["client_id"], None, redirect_uri=evil, response_type="token"
            ),
        }
        codes = {why: refused_page(await http.get(url)) for why, url in cases.items()}
        assert codes == {
            "unknown client": "invalid_client",
            "unknown client, bad request": "invalid_client",
            "no client_id": "invalid_request",
            "unregistered redirect": "invalid_request",
            "unregistered redirect, bad request": "invalid_request",
        }
        verified = await http.get(authorize_url(base, client["client_id"], None))  # no PKCE
        assert verified.status_code == 302
        assert verified.headers["location"].startswith(REDIRECT)
        assert query_of(verified.headers["location"])["error"] == "invalid_request"
    assert guard.outside_loopback() == []


async def test_r7_10_the_daily_registration_bound_counts_an_ipv6_client_by_its_64(tmp_path: Path) -> None:
    """#32 item 8: a client that picks a new address of its /64 for each registration still meets
    the per-address daily bound; another /64 has its own."""
    from toolcrib.web.app import create_app

    settings = settings_for(tmp_path, semantic=False, signin_per_minute=10_000, oauth_clients_per_address=2)
    body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
    async with open_gateway(settings) as gw:
        app = create_app(gw.settings, gateway=gw)
        async with app.router.lifespan_context(app):

            async def register_from(address: str) -> int:
                transport = httpx2.ASGITransport(app=app, client=(address, 5000))
                async with httpx2.AsyncClient(transport=transport, base_url="http://toolcrib.test") as http:
                    return (await http.post("/register", json=body)).status_code

            same_64 = ["2001:db8:7:1::1", "2001:db8:7:1::2", "2001:db8:7:1:abcd::3"]
            assert [await register_from(a) for a in same_64] == [201, 201, 429]
            assert await register_from("2001:db8:7:2::1") == 201
        assert await clients_stored(gw) == 3
