"""OAuth JWT grants against a real local issuer (SPEC R-7.5) and the RFC 9728 metadata (R-2.4).

The issuer's keys are generated here; its JWKS is served over HTTP on a loopback socket by a
stdlib server thread; tokens are minted with PyJWT.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from toolcrib.auth.jwt import InvalidToken, JWTSettings, JWTVerifier, VerifiedToken, looks_like_jwt
from toolcrib.auth.metadata import protected_resource_metadata, resource_metadata_url, www_authenticate

pytestmark = pytest.mark.anyio

ISSUER = "https://issuer.example.test"
AUDIENCE = "https://gateway.example.test/mcp"
T0 = 1_800_000_000.0


@dataclass
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Issuer:
    """A JWKS endpoint: the keys it publishes, what it answers, and how often it was asked."""

    url: str = ""
    keys: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: bytes | None = None
    hits: int = 0

    def publish(self, *jwks: dict[str, Any]) -> None:
        self.keys = list(jwks)


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer.hits += 1
            body = issuer.body if issuer.body is not None else json.dumps({"keys": issuer.keys}).encode()
            self.send_response(issuer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    state = Issuer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))  # listening once constructed
    state.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def other_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def rsa_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    return {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "use": "sig", "alg": "RS256"}


def ec_jwk(key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    return {**ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "use": "sig"}


def mint(key: Any, kid: str | None = "k1", alg: str = "RS256", **overrides: Any) -> str:
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "member-42",
        "iat": int(T0),
        "exp": int(T0) + 600,
        "scope": "mcp:tools mcp:read",
        "jti": "tok-1",
    }
    claims.update(overrides)
    claims = {k: v for k, v in claims.items() if v is not None}
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims, key, algorithm=alg, headers=headers)


def settings(url: str, **changes: Any) -> JWTSettings:
    return JWTSettings(issuer=ISSUER, audience=AUDIENCE, jwks_url=url, **changes)


async def refused(verifier: JWTVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as caught:
        await verifier.verify(token)
    assert caught.value.code == "invalid_token"
    return caught.value.reason


# --- accepted ---------------------------------------------------------------------------------


async def test_r7_5_valid_rs256_token_is_accepted_with_its_scopes(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        verified = await verifier.verify(mint(rsa_key))
    assert verified == VerifiedToken(
        subject="member-42",
        scopes=frozenset({"mcp:tools", "mcp:read"}),
        expires_at=int(T0) + 600,
        token_id="tok-1",
        claims=verified.claims,
    )
    assert verified.claims["iss"] == ISSUER


async def test_r7_5_valid_es256_token_is_accepted(issuer: Issuer, ec_key: ec.EllipticCurvePrivateKey) -> None:
    issuer.publish(ec_jwk(ec_key, "ec1"))
    async with httpx2.AsyncClient() as http:
        verifier = JWTVerifier(settings(issuer.url), http=http, clock=Clock())
        verified = await verifier.verify(mint(ec_key, kid="ec1", alg="ES256", jti=None))
        await verifier.aclose()  # leaves a client it did not make open
        assert not http.is_closed
    assert verified.subject == "member-42"
    assert verified.token_id is None


@pytest.mark.parametrize(
    ("claims", "scopes"),
    [
        ({"scope": "mcp:tools mcp:write"}, {"mcp:tools", "mcp:write"}),
        ({"scope": None, "scp": ["mcp:tools", "mcp:destructive"]}, {"mcp:tools", "mcp:destructive"}),
        ({"scope": None, "scp": "mcp:read mcp:tools"}, {"mcp:read", "mcp:tools"}),
        ({"scope": "mcp:read", "scp": ["mcp:write"]}, {"mcp:read", "mcp:write"}),
        ({"scope": None}, set()),
    ],
)
async def test_r7_5_scopes_are_read_from_scope_and_scp(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, claims: dict[str, Any], scopes: set[str]
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        verified = await verifier.verify(mint(rsa_key, **claims))
    assert verified.scopes == frozenset(scopes)


async def test_r7_5_audience_list_naming_this_resource_is_accepted(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        verified = await verifier.verify(mint(rsa_key, aud=["https://other.test", AUDIENCE]))
    assert verified.subject == "member-42"


# --- refused ----------------------------------------------------------------------------------


async def test_r7_5_token_signed_by_another_key_with_the_same_kid_is_refused(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, other_rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(other_rsa_key, kid="k1")) == "bad_signature"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"aud": "https://elsewhere.test/mcp"}, "wrong_audience"),
        ({"aud": None}, "wrong_audience"),
        ({"iss": "https://evil.test"}, "wrong_issuer"),
        ({"iss": None}, "wrong_issuer"),
        ({"exp": None}, "malformed"),
        ({"sub": None}, "malformed"),
        ({"exp": int(T0) - 31}, "expired"),
        ({"nbf": int(T0) + 31}, "not_yet_valid"),
    ],
)
async def test_r7_5_token_with_a_bad_claim_is_refused_with_its_reason(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, claims: dict[str, Any], reason: str
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(rsa_key, **claims)) == reason


async def test_r7_5_expiry_is_judged_by_the_injected_clock_with_leeway(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    clock = Clock()
    token = mint(rsa_key, exp=int(T0) + 60)
    async with JWTVerifier(settings(issuer.url, leeway_seconds=30), clock=clock) as verifier:
        clock.now = T0 + 89
        assert (await verifier.verify(token)).subject == "member-42"
        clock.now = T0 + 91
        assert await refused(verifier, token) == "expired"


async def test_r7_5_token_without_a_kid_or_with_an_unknown_kid_is_refused(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(rsa_key, kid=None)) == "unknown_key"
        assert await refused(verifier, mint(rsa_key, kid="nope")) == "unknown_key"


async def test_r7_5_algorithms_outside_the_allowed_set_are_refused(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    hmac_token = mint("a-shared-secret-that-is-long-enough-for-hs256", alg="HS256")
    unsigned = mint(None, alg="none")
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, hmac_token) == "bad_signature"
        assert await refused(verifier, unsigned) == "bad_signature"
    assert issuer.hits == 0  # refused before any key was looked up


async def test_r7_5_token_whose_alg_does_not_fit_its_key_is_refused(
    issuer: Issuer, ec_key: ec.EllipticCurvePrivateKey, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(ec_key, kid="k1", alg="ES256")) == "bad_signature"


@pytest.mark.parametrize("token", ["", "not-a-jwt", "a.b.c", "eyJhbGciOiJSUzI1NiJ9", "x" * 20_000])
async def test_r7_5_malformed_tokens_are_refused(issuer: Issuer, token: str) -> None:
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, token) == "malformed"


# --- the key set ------------------------------------------------------------------------------


async def test_r7_5_jwks_server_down_refuses_with_jwks_unavailable(rsa_key: rsa.RSAPrivateKey) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{closed_port}/jwks.json"
    async with JWTVerifier(settings(url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(rsa_key)) == "jwks_unavailable"


@pytest.mark.parametrize(
    ("status", "body"), [(500, None), (200, b"<html>not json</html>"), (200, b'{"no": "keys"}')]
)
async def test_r7_5_jwks_server_errors_refuse_with_jwks_unavailable(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, status: int, body: bytes | None
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    issuer.status, issuer.body = status, body
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        assert await refused(verifier, mint(rsa_key)) == "jwks_unavailable"


async def test_r7_5_jwks_fetch_that_never_answers_times_out(rsa_key: rsa.RSAPrivateKey) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/jwks.json"
        async with JWTVerifier(settings(url, jwks_timeout_seconds=0.2), clock=Clock()) as verifier:
            with anyio.fail_after(5):
                assert await refused(verifier, mint(rsa_key)) == "jwks_unavailable"


async def test_r7_5_key_rotation_is_picked_up_by_the_refetch_on_an_unknown_kid(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    clock = Clock()
    async with JWTVerifier(settings(issuer.url), clock=clock) as verifier:
        await verifier.verify(mint(rsa_key))
        issuer.publish(rsa_jwk(rsa_key, "k1"), ec_jwk(ec_key, "k2"))
        clock.now += 31  # past the refetch cooldown, well within the cache time
        verified = await verifier.verify(mint(ec_key, kid="k2", alg="ES256"))
    assert verified.subject == "member-42"
    assert issuer.hits == 2


async def test_r7_5_unknown_kids_within_the_cooldown_fetch_nothing(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    async with JWTVerifier(settings(issuer.url), clock=Clock()) as verifier:
        await verifier.verify(mint(rsa_key))
        for n in range(5):
            assert await refused(verifier, mint(rsa_key, kid=f"forged-{n}")) == "unknown_key"
    assert issuer.hits == 1


async def test_r7_5_key_set_is_cached_then_refetched_after_its_cache_time(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    clock = Clock()
    token = mint(rsa_key, exp=int(T0) + 3600)
    async with JWTVerifier(settings(issuer.url, jwks_cache_seconds=300), clock=clock) as verifier:
        await verifier.verify(token)
        clock.now += 299
        await verifier.verify(token)
        assert issuer.hits == 1
        clock.now += 2
        await verifier.verify(token)
        assert issuer.hits == 2


async def test_r7_5_cached_keys_keep_working_while_the_issuer_is_down(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    clock = Clock()
    token = mint(rsa_key, exp=int(T0) + 3600)
    async with JWTVerifier(settings(issuer.url), clock=clock) as verifier:
        await verifier.verify(token)
        issuer.status = 503
        clock.now += 301
        assert (await verifier.verify(token)).subject == "member-42"
        assert issuer.hits == 2
        assert await refused(verifier, mint(rsa_key, kid="k9")) == "jwks_unavailable"


async def test_r7_5_revoked_key_disappears_from_the_cache_on_refetch(
    issuer: Issuer, rsa_key: rsa.RSAPrivateKey, other_rsa_key: rsa.RSAPrivateKey
) -> None:
    issuer.publish(rsa_jwk(rsa_key, "k1"))
    clock = Clock()
    token = mint(rsa_key, exp=int(T0) + 3600)
    async with JWTVerifier(settings(issuer.url), clock=clock) as verifier:
        await verifier.verify(token)
        issuer.publish(rsa_jwk(other_rsa_key, "k2"))
        clock.now += 301
        assert await refused(verifier, token) == "unknown_key"


def test_looks_like_jwt_tells_jwts_from_other_tokens(rsa_key: rsa.RSAPrivateKey) -> None:
    assert looks_like_jwt(mint(rsa_key))
    assert not looks_like_jwt("tcb_pat_0123456789abcdef")
    assert not looks_like_jwt("eyJub3QiOiJqc29u.eyJ4IjoxfQ.sig")  # header has no alg
    assert not looks_like_jwt("a.b.c")


# --- RFC 9728 metadata and the RFC 6750 challenge (R-2.4) -------------------------------------


def test_r2_4_protected_resource_metadata_document() -> None:
    document = protected_resource_metadata(AUDIENCE, [ISSUER], ["mcp:tools", "mcp:read"])
    assert document == {
        "resource": AUDIENCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:tools", "mcp:read"],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolcrib",
    }


def test_r2_4_metadata_url_inserts_the_well_known_path_before_the_resource_path() -> None:
    assert resource_metadata_url(AUDIENCE) == (
        "https://gateway.example.test/.well-known/oauth-protected-resource/mcp"
    )
    assert resource_metadata_url("https://gw.test/") == "https://gw.test/.well-known/oauth-protected-resource"


def test_r2_4_challenge_without_a_token_names_only_the_metadata() -> None:
    url = "https://gw.test/.well-known/oauth-protected-resource"
    assert www_authenticate(url) == f'Bearer resource_metadata="{url}"'


def test_r2_4_challenge_for_an_invalid_token_and_a_missing_scope() -> None:
    url = "https://gw.test/.well-known/oauth-protected-resource"
    assert www_authenticate(url, error="invalid_token", description='expired "now"') == (
        f'Bearer error="invalid_token", error_description="expired now", resource_metadata="{url}"'
    )
    assert www_authenticate(url, error="insufficient_scope", scope="mcp:write") == (
        f'Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="{url}"'
    )
