"""Hostile input at toolcrib's authorization server (R-7.7, R-7.9, R-7.10, #22 item 6).

Each case is refused with the error its RFC names, leaves nothing half-created, and (where a
grant is revoked for abuse) writes an ``admin`` audit row. A real gateway served over HTTP; the
browser is an httpx2 client with cookies posting the real forms; client ID metadata documents are
served by a real server on loopback.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.oauth_person import (
    REDIRECT,
    Person,
    authorize_url,
    hidden,
    pkce,
    query_of,
    refused_page,
    register,
    serve_app,
)
from tests.e2e.org import rpc
from tests.principals import OPERATOR
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.housekeeping import purge_expired
from toolcrib.gateway.identity import members
from toolcrib.store.tables import audit, grants, oauth_clients, oauth_codes

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class World:
    gw: Gateway
    base: str
    http: httpx2.AsyncClient

    async def member(self, name: str, role: str = "member") -> str:
        await members.add_member(self.gw.store, name, role, actor=OPERATOR)
        return (
            await members.create_token(
                self.gw.store, name, "mcp:tools mcp:read mcp:write mcp:destructive", actor=OPERATOR
            )
        )[1]

    async def count(self, table: Any, *where: Any) -> int:
        async with self.gw.store.db.read() as conn:
            return int(
                (await conn.execute(select(func.count()).select_from(table).where(*where))).scalar_one()
            )

    async def code_for(self, person: Person, client_id: str, challenge: str, **params: str) -> dict[str, str]:
        back = await person.authorize(authorize_url(self.base, client_id, challenge, **params))
        assert back.status_code == 302, back.text
        return query_of(back.headers["location"])

    async def exchange(self, client_id: str, code: str, verifier: str, **extra: str) -> httpx2.Response:
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
        form.update(client_id=client_id, redirect_uri=REDIRECT)
        form.update(extra)
        return await self.http.post(self.base + "/token", data=form)


@pytest.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    settings = settings_for(
        tmp_path_factory.mktemp("oauth"),
        semantic=False,
        signin_per_minute=10_000,
        oauth_allow_loopback_client_documents=True,  # the documents are served on loopback over http
    )
    async with open_gateway(settings) as gw, serve(gw) as base, httpx2.AsyncClient(timeout=30) as http:
        await owner_token(gw)
        yield World(gw, base, http)


async def test_r7_7_a_code_used_twice_is_invalid_grant_and_revokes_the_grant_it_issued(world: World) -> None:
    client = await register(world.http, world.base)
    verifier, challenge = pkce()
    async with Person(world.base, await world.member("cody")) as person:
        answer = await world.code_for(person, client["client_id"], challenge)
    assert answer["iss"] == world.base
    assert answer["state"] == "st-1"
    first = await world.exchange(client["client_id"], answer["code"], verifier)
    assert first.status_code == 200, first.text
    access = first.json()["access_token"]
    assert (await rpc(world.base, access, "tools/list", {})).status_code == 200
    second = await world.exchange(client["client_id"], answer["code"], verifier)
    assert second.status_code == 400
    assert second.json()["error"] == "invalid_grant"
    assert (await rpc(world.base, access, "tools/list", {})).status_code == 401  # RFC 6749 §10.5
    assert await world.count(audit, audit.c.kind == "admin", audit.c.operation == "oauth.code_replayed") == 1


async def test_r7_7_redirect_uris_match_exactly_except_a_loopback_port(world: World) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    elsewhere = await world.http.get(
        authorize_url(world.base, client["client_id"], challenge, redirect_uri="https://evil.example/cb")
    )
    assert refused_page(elsewhere) == "invalid_request"  # a page, never redirected there
    other_path = await world.http.get(
        authorize_url(world.base, client["client_id"], challenge, redirect_uri="http://127.0.0.1:9/other")
    )
    assert refused_page(other_path) == "invalid_request"
    other_port = await world.http.get(
        authorize_url(
            world.base, client["client_id"], challenge, redirect_uri="http://127.0.0.1:5555/callback"
        )
    )
    assert other_port.status_code == 302  # RFC 8252 §7.3: any port on loopback
    assert other_port.headers["location"].startswith(world.base + "/auth/consent?")


async def test_r7_7_a_code_redeemed_with_another_redirect_uri_is_invalid_request(world: World) -> None:
    client = await register(world.http, world.base, redirect_uris=[REDIRECT, "http://127.0.0.1:9/two"])
    verifier, challenge = pkce()
    async with Person(world.base, await world.member("rita")) as person:
        answer = await world.code_for(person, client["client_id"], challenge)
    swapped = await world.exchange(
        client["client_id"], answer["code"], verifier, redirect_uri="http://127.0.0.1:9/two"
    )
    assert swapped.status_code == 400
    assert swapped.json()["error"] == "invalid_request"
    assert await world.count(grants, grants.c.member == "rita", grants.c.kind == "oauth") == 0


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"code_challenge": "-", "code_challenge_method": "-"}, "no challenge"),
        ({"code_challenge_method": "plain"}, "plain"),
        ({"code_challenge_method": "-"}, "no method means plain (RFC 7636 §4.3)"),
    ],
)
async def test_r7_7_pkce_missing_or_plain_is_invalid_request(
    world: World, params: dict[str, str], why: str
) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    refused = await world.http.get(authorize_url(world.base, client["client_id"], challenge, **params))
    assert refused.status_code == 302, why
    back = query_of(refused.headers["location"])
    assert back["error"] == "invalid_request", why
    assert refused.headers["location"].startswith(REDIRECT)


async def test_r7_7_a_wrong_code_verifier_is_invalid_grant(world: World) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    async with Person(world.base, await world.member("vera")) as person:
        answer = await world.code_for(person, client["client_id"], challenge)
    wrong = await world.exchange(client["client_id"], answer["code"], pkce()[0])
    assert wrong.json()["error"] == "invalid_grant"
    assert await world.count(grants, grants.c.member == "vera", grants.c.kind == "oauth") == 0


async def test_r7_7_a_token_for_another_resource_is_invalid_target(world: World) -> None:
    client = await register(world.http, world.base)
    verifier, challenge = pkce()
    other = await world.http.get(
        authorize_url(world.base, client["client_id"], challenge, resource="https://other.example/mcp")
    )
    assert query_of(other.headers["location"])["error"] == "invalid_target"
    async with Person(world.base, await world.member("tara")) as person:
        answer = await world.code_for(person, client["client_id"], challenge, resource=world.base + "/mcp")
    refused = await world.exchange(
        client["client_id"], answer["code"], verifier, resource="https://other.example"
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_target"
    ours = await world.exchange(client["client_id"], answer["code"], verifier, resource=world.base + "/mcp")
    assert ours.status_code == 200, ours.text


async def test_r7_9_a_tampered_or_replayed_consent_request_is_refused_and_issues_nothing(
    world: World,
) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    async with Person(world.base, await world.member("paul")) as person:
        page = await person.walk(authorize_url(world.base, client["client_id"], challenge))
        assert page.status_code == 200
        sealed = hidden(page.text, "request")
        tampered = await person.http.get(
            world.base + "/auth/consent", params={"request": sealed[:-4] + "AAAA"}
        )
        assert tampered.status_code == 400
        assert "invalid_request" in tampered.text
        first = await person.answer(page)
        assert first.status_code == 302
        replayed = await person.answer(page)
        assert replayed.status_code == 400
        assert "invalid_request" in replayed.text
    assert await world.count(oauth_codes, oauth_codes.c.member == "paul") == 1


async def test_r7_9_denying_sends_access_denied_with_state_and_issuer(world: World) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    async with Person(world.base, await world.member("dina"), decision="deny") as person:
        back = query_of(
            (await person.authorize(authorize_url(world.base, client["client_id"], challenge))).headers[
                "location"
            ]
        )
    assert back == {"error": "access_denied", "state": "st-1", "iss": world.base}
    assert await world.count(oauth_codes, oauth_codes.c.member == "dina") == 0


async def test_r7_9_a_role_without_tool_execute_gets_a_page_that_says_why_and_no_code(world: World) -> None:
    client = await register(world.http, world.base)
    _, challenge = pkce()
    async with Person(world.base, await world.member("audrey", "auditor")) as person:
        page = await person.walk(authorize_url(world.base, client["client_id"], challenge))
    assert page.status_code == 403
    assert "permission_required" in page.text
    assert "tool:execute" in page.text
    assert await world.count(oauth_codes, oauth_codes.c.member == "audrey") == 0


async def test_r7_9_narrowed_scopes_bound_the_grant_and_remembered_consent_skips_the_page(
    world: World,
) -> None:
    client = await register(world.http, world.base)
    verifier, challenge = pkce()
    token = await world.member("nora")
    async with Person(world.base, token, scopes=["mcp:tools", "mcp:read"], remember=True) as person:
        answer = await world.code_for(
            person, client["client_id"], challenge, scope="mcp:tools mcp:read mcp:write"
        )
        issued = await world.exchange(client["client_id"], answer["code"], verifier)
        assert issued.json()["scope"] == "mcp:read mcp:tools"
        # the same or fewer scopes again: no page, straight back with a code
        again = await person.http.get(
            authorize_url(world.base, client["client_id"], challenge, scope="mcp:tools mcp:read")
        )
        page_or_back = await person.http.get(again.headers["location"])
        assert page_or_back.status_code == 302
        assert "code" in query_of(page_or_back.headers["location"])
        # more than remembered: the page again
        more = await person.walk(authorize_url(world.base, client["client_id"], challenge, scope="mcp:write"))
        assert more.status_code == 200


async def test_r7_9_a_sign_in_session_is_no_bearer_token_and_next_is_local_only(world: World) -> None:
    token = await world.member("sid")
    async with Person(world.base, token) as person:
        form = await person.http.get(world.base + "/auth/login", params={"next": "https://evil.example/x"})
        assert hidden(form.text, "next") == "/auth/grants"
        signed = await person.sign_in(world.base + "/auth/login?next=//evil.example")
        assert signed.headers["location"] == "/auth/grants"
        assert "frame-ancestors 'none'" in form.headers["content-security-policy"]
        sealed = person.http.cookies.get("toolcrib_auth")
    session = world.gw.store.box.open(sealed)["token"]
    assert session.startswith("tcs_")
    assert (await rpc(world.base, session, "tools/list", {})).status_code == 401


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"redirect_uris": [f"http://127.0.0.1:9/{i}" for i in range(11)]}, "invalid_client_metadata"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT + "?" + "x" * 2100]}, "invalid_redirect_uri"),
        ({"client_name": "n" * 201}, "invalid_client_metadata"),
    ],
)
async def test_r7_7_registration_out_of_bounds_is_refused_and_stores_nothing(
    world: World, metadata: dict[str, Any], error: str
) -> None:
    before = await world.count(oauth_clients)
    body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    refused = await world.http.post(world.base + "/register", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"] == error
    assert await world.count(oauth_clients) == before


async def test_r7_7_an_oversized_registration_is_refused_before_it_is_read(world: World) -> None:
    before = await world.count(oauth_clients)
    body = {"redirect_uris": [REDIRECT], "software_id": "x" * 20_000}
    refused = await world.http.post(world.base + "/register", json=body)
    assert refused.status_code == 413
    assert refused.json()["error"] == "invalid_client_metadata"
    assert await world.count(oauth_clients) == before


# --- client ID metadata documents --------------------------------------------------------------


def document_server() -> Starlette:
    def doc(request: Request, **overrides: Any) -> dict[str, Any]:
        url = str(request.url)
        return {"client_id": url, "client_name": "Doc Client", "redirect_uris": [REDIRECT], **overrides}

    async def good(request: Request) -> Response:
        return JSONResponse(doc(request))

    async def liar(request: Request) -> Response:
        return JSONResponse(doc(request, client_id="https://claude.ai/oauth/client.json"))

    async def huge(request: Request) -> Response:
        return JSONResponse(doc(request, padding="x" * 100_000))

    async def slow(request: Request) -> Response:
        async def dribble() -> AsyncIterator[bytes]:
            for _ in range(30):
                yield b" "
                await anyio.sleep(0.5)

        return StreamingResponse(dribble(), media_type="application/json")

    return Starlette(
        routes=[
            Route(f"/{n}.json", f)
            for n, f in (("good", good), ("liar", liar), ("huge", huge), ("slow", slow))
        ]
    )


async def test_r7_7_a_client_id_metadata_document_names_the_client_on_the_consent_page(world: World) -> None:
    verifier, challenge = pkce()
    async with serve_app(document_server()) as docs:
        client_id = docs + "/good.json"
        async with Person(world.base, await world.member("cimd")) as person:
            page = await person.walk(authorize_url(world.base, client_id, challenge))
            assert page.status_code == 200
            assert "Doc Client" in page.text
            answer = query_of((await person.answer(page)).headers["location"])
        issued = await world.exchange(client_id, answer["code"], verifier)
        assert issued.status_code == 200, issued.text
    async with world.gw.store.db.read() as conn:
        row = (await conn.execute(select(oauth_clients).where(oauth_clients.c.client_id == client_id))).one()
    assert row.kind == "cimd"
    assert row.fetched_at is not None


@pytest.mark.parametrize(
    ("name", "why"),
    [("liar", "client_id_mismatch"), ("huge", "document_too_large"), ("slow", "document_slow")],
)
async def test_r7_7_a_lying_oversized_or_slow_metadata_document_is_refused(
    world: World, name: str, why: str
) -> None:
    _, challenge = pkce()
    async with serve_app(document_server()) as docs:
        client_id = f"{docs}/{name}.json"
        with anyio.fail_after(12):  # the fetch gives up after 5 s, not after the 15 s of dribble
            refused = await world.http.get(authorize_url(world.base, client_id, challenge))
    assert refused_page(refused) == "invalid_client"
    assert f"({why})" in refused.text
    assert await world.count(oauth_clients, oauth_clients.c.client_id == client_id) == 0


# --- floods: per-address bounds (their own gateway, with small limits) ---------------------------


async def test_r7_7_a_registration_flood_stops_at_the_per_address_daily_bound(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, semantic=False, oauth_clients_per_address=3, signin_per_minute=10_000)
    async with open_gateway(settings) as gw, serve(gw) as base, httpx2.AsyncClient(timeout=30) as http:
        for _ in range(3):
            await register(http, base)
        body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
        flooded = await http.post(base + "/register", json=body)
        assert flooded.status_code == 429
        assert flooded.json()["error"] == "rate_limited"
        async with gw.store.db.read() as conn:
            assert (await conn.execute(select(func.count()).select_from(oauth_clients))).scalar_one() == 3


async def test_r7_10_token_authorize_register_and_login_are_limited_per_client_address(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, semantic=False, signin_per_minute=2)
    async with open_gateway(settings) as gw, serve(gw) as base, httpx2.AsyncClient(timeout=30) as http:
        for path, send in (
            ("/token", lambda: http.post(base + "/token", data={"grant_type": "refresh_token"})),
            ("/authorize", lambda: http.get(base + "/authorize?client_id=x")),
            ("/register", lambda: http.post(base + "/register", json={})),
            ("/auth/login", lambda: http.post(base + "/auth/login", data={"token": "tcp_x"})),
        ):
            answers = [await send() for _ in range(3)]
            assert [a.status_code == 429 for a in answers] == [False, False, True], path
            assert int(answers[-1].headers["retry-after"]) >= 1
            assert answers[-1].json()["error"] == "rate_limited"


async def test_r7_7_housekeeping_forgets_unused_clients_and_expired_codes_but_keeps_used_clients(
    tmp_path: Path,
) -> None:
    now = [time.time()]  # the SDK checks a code's expiry against the real clock
    settings = settings_for(tmp_path, semantic=False, oauth_unused_client_days=1, signin_per_minute=10_000)
    async with open_gateway(settings, clock=lambda: now[0]) as gw, serve(gw) as base:
        async with httpx2.AsyncClient(timeout=30) as http:
            await owner_token(gw)
            idle = await register(http, base)
            used = await register(http, base)
            verifier, challenge = pkce()
            await members.add_member(gw.store, "hana", "member", actor=OPERATOR)
            _, pat = await members.create_token(gw.store, "hana", "mcp:tools mcp:read", actor=OPERATOR)
            async with Person(base, pat) as person:
                back = await person.authorize(authorize_url(base, used["client_id"], challenge))
            code = query_of(back.headers["location"])["code"]
            form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
            form.update(client_id=used["client_id"], redirect_uri=REDIRECT)
            assert (await http.post(base + "/token", data=form)).status_code == 200
        now[0] += 2 * 86400
        await purge_expired(gw.store.db, gw.store.clock(), gw.settings)
        async with gw.store.db.read() as conn:
            left = {r.client_id for r in (await conn.execute(select(oauth_clients))).all()}
            codes = (await conn.execute(select(func.count()).select_from(oauth_codes))).scalar_one()
        assert left == {used["client_id"]}
        assert idle["client_id"] not in left
        assert codes == 0


async def test_r7_9_a_narrow_personal_token_cannot_sign_in_a_wider_grant(world: World) -> None:
    client = await register(world.http, world.base)
    verifier, challenge = pkce()
    await members.add_member(world.gw.store, "nick", "member", actor=OPERATOR)
    _, narrow = await members.create_token(world.gw.store, "nick", "mcp:tools mcp:read", actor=OPERATOR)
    async with Person(
        world.base, narrow, scopes=["mcp:tools", "mcp:read", "mcp:write", "mcp:destructive"]
    ) as person:
        answer = await world.code_for(
            person, client["client_id"], challenge, scope="mcp:tools mcp:read mcp:write"
        )
        assert 'value="mcp:write" disabled' in person.last_page
    issued = await world.exchange(client["client_id"], answer["code"], verifier)
    assert issued.json()["scope"] == "mcp:read mcp:tools"


async def test_r7_9_a_clients_access_token_does_not_sign_a_person_in(world: World) -> None:
    client = await register(world.http, world.base)
    verifier, challenge = pkce()
    async with Person(world.base, await world.member("abel")) as person:
        answer = await world.code_for(person, client["client_id"], challenge)
    access = (await world.exchange(client["client_id"], answer["code"], verifier)).json()["access_token"]
    async with Person(world.base, access) as thief:
        refused = await thief.sign_in(world.base + "/auth/login")
    assert refused.status_code == 401
    assert "unauthenticated" in refused.text


@pytest.mark.parametrize(
    "client_id",
    ["https://metadata.google.internal/client.json", "https://[::ffff:169.254.169.254]/client.json"],
)
async def test_r13_5_a_metadata_document_at_a_metadata_address_is_never_fetched(
    world: World, client_id: str
) -> None:
    """The client ID metadata document is fetched on someone's behalf (R-13.5): through the address
    policy, which refuses a metadata name or address before any connection is made."""
    _, challenge = pkce()
    refused = await world.http.get(authorize_url(world.base, client_id, challenge))
    assert refused_page(refused) == "invalid_client"
    assert "(document_address_refused)" in refused.text
    assert await world.count(oauth_clients, oauth_clients.c.client_id == client_id) == 0
