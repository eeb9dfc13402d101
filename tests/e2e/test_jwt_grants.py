"""OAuth 2.1 JWT grants against a real local issuer (R-7.5) and RFC 9728 metadata (R-2.4), end to end."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.conftest import Process
from tests.e2e.mcpclient import payload
from tests.e2e.org import READ_TOOL, error_of, names_of, organization, rpc
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.identity import members

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

# --- OAuth JWT grants against a real local issuer: RFC 9728 -------------------------

ISSUER = "https://issuer.example.test"
AUDIENCE = "https://gateway.example.test/mcp"


@dataclass
class Issuer:
    """A JWKS endpoint on a loopback socket, and a signing key it publishes."""

    url: str
    key: rsa.RSAPrivateKey

    def mint(self, subject: str, *, key: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 600}
        body["scope"] = "mcp:tools mcp:read"
        body.update(claims)
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "use": "sig", "alg": "RS256"}
    body = json.dumps({"keys": [jwk]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield Issuer(f"http://127.0.0.1:{server.server_address[1]}/jwks.json", key)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def oauth_env(issuer: Issuer, monkeypatch: pytest.MonkeyPatch) -> Issuer:
    monkeypatch.setenv("TOOLCRIB_OAUTH_ISSUER", ISSUER)
    monkeypatch.setenv("TOOLCRIB_OAUTH_JWKS_URL", issuer.url)
    monkeypatch.setenv("TOOLCRIB_OAUTH_AUDIENCE", AUDIENCE)
    return issuer


async def test_r7_5_valid_jwt_of_a_member_lists_tools_and_runs_a_read_tool(
    tmp_path: Path, fixture_http: Process, oauth_env: Issuer
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await members.add_member(org.gw.store, "mia", "member", actor=OPERATOR)
        token = oauth_env.mint("mia")
        listed = await org.listed(token)
        assert listed[:2] == ["search_tools", "execute_tool"]
        assert names_of(await org.search(token, "get the request headers"))[0] == READ_TOOL
        assert payload(await org.execute(token, READ_TOOL))["transport"] == "http"
        # Short of a scope: answered in-band, not by HTTP.
        error = error_of(await org.execute(token, "desk__echo_message", {"message": "m"}))
        assert (error["code"], error["scope"]) == ("scope_required", "mcp:write")
        no_tools = oauth_env.mint("mia", scope="mcp:read")
        assert error_of(await org.call(no_tools, "search_tools", {"query": "add"}))["scope"] == "mcp:tools"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"signed_by_another_key": True}, "bad_signature"),
        ({"aud": "https://elsewhere.example.test/mcp"}, "wrong_audience"),
        ({"exp": int(time.time()) - 3600, "iat": int(time.time()) - 7200}, "expired"),
    ],
)
async def test_r7_5_refused_jwt_is_401_with_www_authenticate_and_the_reason(
    tmp_path: Path, fixture_http: Process, oauth_env: Issuer, claims: dict[str, Any], reason: str
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await members.add_member(org.gw.store, "mia", "member", actor=OPERATOR)
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key = other if claims.pop("signed_by_another_key", False) else None
        token = oauth_env.mint("mia", key=key, **claims)
        response = await rpc(org.base, token, "tools/list", {})
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert 'error="invalid_token"' in challenge
        assert "resource_metadata=" in challenge
        assert response.json()["error"] == "invalid_token"
        assert reason in response.json()["message"]


async def test_r7_5_jwt_of_someone_who_is_not_an_active_member_is_401(
    tmp_path: Path, fixture_http: Process, oauth_env: Issuer
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await members.add_member(org.gw.store, "sue", "member", actor=OPERATOR)
        assert (await rpc(org.base, oauth_env.mint("nobody"), "tools/list", {})).status_code == 401
        token = oauth_env.mint("sue")
        assert (await rpc(org.base, token, "tools/list", {})).status_code == 200
        await members.suspend_member(org.gw.store, "sue", actor=OPERATOR)
        assert (await rpc(org.base, token, "tools/list", {})).status_code == 401


async def test_r7_5_grants_are_never_passed_through_to_the_upstream(
    tmp_path: Path, fixture_http: Process, oauth_env: Issuer
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        await add_connection(
            org.gw,
            "keyed",
            connector="Helpdesk",
            url=org.upstream,
            headers={"X-Api-Key": "conn-key-0123456789"},
            actor=OPERATOR,
        )
        await members.add_member(org.gw.store, "mia", "member", actor=OPERATOR)
        jwt_token = oauth_env.mint("mia")
        pat = await org.token("bo")
        for token in (jwt_token, pat, org.owner):
            for account in ("desk", "keyed"):
                seen = payload(await org.execute(token, f"{account}__get_request_headers"))
                assert seen["transport"] == "http"
                headers = seen["headers"]
                assert "authorization" not in headers, headers
                assert token not in json.dumps(headers)
                assert token[-12:] not in json.dumps(headers)
        # The connection's own header does reach its upstream (and is redacted on the way back).
        assert "x-api-key" in payload(await org.execute(pat, "keyed__get_request_headers"))["headers"]


async def test_r2_4_protected_resource_metadata_and_the_401_challenge_point_at_each_other(
    tmp_path: Path, fixture_http: Process, oauth_env: Issuer
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        response = await rpc(org.base, None, "tools/list", {})
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert "error=" not in challenge
        metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
        async with httpx2.AsyncClient(timeout=30) as http:
            document = (await http.get(metadata_url)).json()
        assert document["resource"] == org.base + "/mcp"
        assert document["authorization_servers"] == [
            org.base,
            ISSUER,
        ]  # this gateway, and the issuer
        assert {"mcp:tools", "mcp:read", "mcp:write", "mcp:destructive"} <= set(document["scopes_supported"])
        assert document["bearer_methods_supported"] == ["header"]
        async with httpx2.AsyncClient(timeout=30) as http:  # RFC 9728 section 3.1: the resource's own path
            assert (await http.get(org.base + "/.well-known/oauth-protected-resource/mcp")).json() == document
