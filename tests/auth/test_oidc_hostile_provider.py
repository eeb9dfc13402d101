"""An identity provider that answers garbage, too much or too slowly (R-7.7, #22): each is refused
with a page naming the error, never waited on or read whole; and what ``/auth/oidc/start`` hands the
browser (PKCE S256, state, nonce, a sealed Lax cookie, a ``next`` that stays on this gateway)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from tests.admin.console import Console, console
from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, settings_for

from toolcrib.auth.oidc import MAX_DOCUMENT_BYTES, OIDCClient, OIDCConfig, Pending

pytestmark = pytest.mark.anyio

ISSUER = "https://idp.example.test"


def discovery(**changes: Any) -> dict[str, Any]:
    doc = {
        "issuer": ISSUER,
        "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token",
        "jwks_uri": ISSUER + "/jwks",
        "code_challenge_methods_supported": ["S256"],
    }
    return {**doc, **changes}


Handler = Callable[[httpx2.Request], Any]


@asynccontextmanager
async def signing_console(
    tmp_path: Path, handler: Handler | None = None, *, transport: httpx2.AsyncBaseTransport | None = None
) -> AsyncIterator[Console]:
    settings = settings_for(tmp_path, oidc_issuer=ISSUER, oidc_client_id="tc", oidc_label="Example IdP")
    async with open_gateway(settings) as gw, console(gw) as con:
        config = OIDCConfig(ISSUER, "tc", None, "openid email", settings.resource_url + "/auth/oidc/callback")
        chosen = transport or httpx2.MockTransport(handler)
        con.app.state.oidc = OIDCClient(config, clock=gw.store.clock, transport=chosen, fetch_seconds=0.5)
        yield con


async def refusal(con: Console) -> tuple[int, str, str]:
    http = await con.browser()
    page = await http.get("/auth/oidc/start?next=/admin/")
    found = re.search(r'<p id="error"><code>(\w+)</code> \(<code>(\w+)</code>\)', page.text)
    assert found, page.text[:300]
    assert "set-cookie" not in page.headers
    return page.status_code, found[1], found[2]


def _huge_stream() -> httpx2.Response:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(64):
            yield b" " * 16384

    return httpx2.Response(200, content=chunks(), headers={"content-type": "application/json"})


async def _slow(request: httpx2.Request) -> httpx2.Response:
    await anyio.sleep(30)
    return httpx2.Response(200, json=discovery())


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (
            lambda r: httpx2.Response(200, text="<html>not json</html>"),
            (502, "server_error", "discovery_invalid"),
        ),
        (lambda r: httpx2.Response(200, json=["a list"]), (502, "server_error", "discovery_invalid")),
        (lambda r: httpx2.Response(500, json={}), (502, "server_error", "discovery_status")),
        (
            lambda r: httpx2.Response(200, content=b"{" + b" " * (MAX_DOCUMENT_BYTES + 1) + b"}"),
            (502, "server_error", "discovery_too_large"),
        ),
        (lambda r: _huge_stream(), (502, "server_error", "discovery_too_large")),
        (_slow, (503, "temporarily_unavailable", "discovery_timeout")),
        (
            lambda r: httpx2.Response(200, json=discovery(issuer="https://evil.example.test")),
            (502, "server_error", "discovery_issuer_mismatch"),
        ),
        (
            lambda r: httpx2.Response(200, json=discovery(code_challenge_methods_supported=["plain"])),
            (502, "server_error", "pkce_unsupported"),
        ),
        (
            lambda r: httpx2.Response(200, json=discovery(token_endpoint="javascript:alert(1)")),
            (502, "server_error", "discovery_invalid"),
        ),
        (
            lambda r: httpx2.Response(200, json=discovery(token_endpoint="http://idp.example.test/token")),
            (502, "server_error", "discovery_invalid"),
        ),
    ],
    ids=[
        "not-json",
        "not-object",
        "http-500",
        "huge",
        "huge-chunked",
        "slow",
        "other-issuer",
        "no-s256",
        "bad-url",
        "plain-http",
    ],
)
async def test_r7_7_provider_answering_garbage_is_refused_with_the_error_named(
    tmp_path: Path, handler: Handler, expected: tuple[int, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    async with signing_console(tmp_path, handler) as con:
        with anyio.fail_after(10):
            assert await refusal(con) == expected
    assert f"OIDC sign-in refused: {expected[1]} ({expected[2]})" in caplog.text


async def test_r7_7_unreachable_provider_is_temporarily_unavailable(tmp_path: Path) -> None:
    closed = free_port()

    class Loopback(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=closed)
            return await super().handle_async_request(request)

    async with signing_console(tmp_path, transport=Loopback()) as con:
        assert await refusal(con) == (503, "temporarily_unavailable", "discovery_unreachable")


async def test_r7_7_start_sends_pkce_s256_state_and_nonce_and_keeps_them_sealed(tmp_path: Path) -> None:
    async with signing_console(tmp_path, lambda r: httpx2.Response(200, json=discovery())) as con:
        http = await con.browser()
        answer = await http.get("/auth/oidc/start?next=//evil.example.test/x")
        assert answer.status_code == 303
        url = urlsplit(answer.headers["location"])
        assert f"{url.scheme}://{url.netloc}{url.path}" == ISSUER + "/authorize"
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert query["code_challenge_method"] == "S256"
        assert query["response_type"] == "code"
        assert query["redirect_uri"].endswith("/auth/oidc/callback")
        assert len(query["state"]) >= 32
        assert len(query["nonce"]) >= 32
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=lax" in cookie
        assert "Path=/auth/oidc" in cookie
        sealed = http.cookies["toolcrib_oidc"]
        assert query["state"] not in sealed
        pending = Pending.from_json(con.gw.store.box.open(sealed))
        assert pending is not None
        assert (pending.state, pending.nonce) == (query["state"], query["nonce"])
        assert pending.next == "/admin/"  # another site is never a place to go back to


async def test_r7_8_console_login_offers_the_provider_only_when_one_is_configured(tmp_path: Path) -> None:
    async with signing_console(tmp_path, lambda r: httpx2.Response(200, json=discovery())) as con:
        page = await (await con.browser()).get("/admin/login")
        link = re.search(r'<a[^>]*href="([^"]*oidc[^"]*)"[^>]*>Sign in with Example IdP</a>', page.text)
        assert link, page.text
        assert 'name="token"' in page.text  # personal-token sign-in stays
    (tmp_path / "plain").mkdir()
    async with open_gateway(settings_for(tmp_path / "plain")) as gw, console(gw) as con:
        page = await (await con.browser()).get("/admin/login")
        assert "oidc" not in page.text
        assert (await (await con.browser()).get("/auth/oidc/start")).status_code == 404


def test_r7_8_owner_cannot_be_mapped_and_the_map_is_checked_at_start(tmp_path: Path) -> None:
    from toolcrib.errors import ConfigError
    from toolcrib.web.app import create_app

    for bad in ("tc-admins=owner", "staff=guest", "staff", "x=superuser"):
        settings = settings_for(tmp_path, oidc_issuer=ISSUER, oidc_client_id="tc", oidc_role_map=bad)
        with pytest.raises(ConfigError):
            create_app(settings)
