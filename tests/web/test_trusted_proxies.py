"""``X-Forwarded-Proto`` and ``X-Forwarded-For`` are believed only from ``trusted_proxies`` (#21).

Against a real ``toolcrib serve`` (its own uvicorn, reached from 127.0.0.1): behind a trusted proxy
that ended TLS the console's sign-in cookie is ``Secure``; the same headers from a peer not listed
are ignored (uvicorn's default trust of 127.0.0.1 is off, so no second place decides). The
client address that per-client limits count is rewritten only for a trusted proxy, and then to
the right-most forwarded address that is not itself a proxy.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from starlette.types import Receive, Scope, Send

from tests.admin.console import hidden
from tests.conftest import cli_json, start_gateway

FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}


def _sign_in_cookie(base: str, token: str) -> str:
    with httpx2.Client(base_url=base, timeout=60) as http:
        form = http.get("/admin/login", headers=FORWARDED)
        data = {"token": token, "nonce": hidden(form.text, "nonce")}
        # The proxy speaks https to the browser, so the browser sends back even a Secure cookie.
        nonce_cookie = "; ".join(f"{k}={v}" for k, v in form.cookies.items())
        http.cookies.clear()
        answer = http.post("/admin/login", data=data, headers={**FORWARDED, "Cookie": nonce_cookie})
        assert answer.status_code == 303
        return next(
            v for k, v in answer.headers.multi_items() if k == "set-cookie" and "toolcrib_admin=" in v
        )


def _is_secure(cookie: str) -> bool:
    return "secure" in {a.strip().split("=")[0].lower() for a in cookie.split(";")}


def test_r13_console_cookie_is_secure_only_behind_a_trusted_tls_proxy(tmp_path: Path) -> None:
    for trusted, secure in (([], False), (["127.0.0.1/32", "10.0.0.0/8"], True)):
        db_url = f"sqlite:///{tmp_path / f'gw{len(trusted)}.db'}"
        token = str(cli_json(db_url, "init")["token"])  # type: ignore[index]
        env = {"TOOLCRIB_TRUSTED_PROXIES": json.dumps(trusted)}
        gateway = start_gateway(db_url, env, log_path=tmp_path / f"gw{len(trusted)}.log")
        try:
            assert _is_secure(_sign_in_cookie(gateway.url, token)) is secure, trusted
        finally:
            gateway.stop()


async def _seen(peer: str, headers: dict[str, str], proxies: list[str]) -> tuple[str, str]:
    """The scheme and client address the app behind the middleware sees for one request."""
    from toolcrib.web.proxies import ForwardedHeaders, TrustedProxies

    seen: dict[str, object] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.update(scheme=scope["scheme"], client=scope["client"][0])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    transport = httpx2.ASGITransport(app=ForwardedHeaders(app, TrustedProxies(proxies)), client=(peer, 5555))
    async with httpx2.AsyncClient(transport=transport, base_url="http://gw.test") as http:
        await http.get("/", headers=headers)
    return str(seen["scheme"]), str(seen["client"])


@pytest.mark.anyio
async def test_r7_10_client_address_is_rewritten_only_for_a_trusted_proxy() -> None:
    proxies = ["10.0.0.0/8", "::1"]
    chain = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.9, 203.0.113.7, 10.1.2.3"}
    # A trusted proxy: the right-most address that is not a proxy (the left one is the client's say).
    assert await _seen("10.0.0.5", chain, proxies) == ("https", "203.0.113.7")
    assert await _seen("::1", chain, proxies) == ("https", "203.0.113.7")
    # Anyone else: both headers ignored, the peer is the client.
    assert await _seen("192.0.2.44", chain, proxies) == ("http", "192.0.2.44")
    assert await _seen("10.0.0.5", chain, []) == ("http", "10.0.0.5")
    # A forwarded client that is no address is not believed either.
    assert await _seen("10.0.0.5", {"X-Forwarded-For": "unknown"}, proxies) == ("http", "10.0.0.5")
    # A trusted proxy with nothing forwarded leaves the request as it came.
    assert await _seen("10.0.0.5", {}, proxies) == ("http", "10.0.0.5")
