"""OAuth 2.1 access tokens: JWTs of one configured issuer, checked against its JWKS (SPEC R-7.5).

A token is accepted when its signature verifies under a key of the issuer's JSON Web Key Set (an
algorithm of ``JWTSettings.algorithms``, the key picked by the header's ``kid``), ``iss`` is the
issuer, ``aud`` names this resource, and ``exp`` (required) and ``nbf`` hold at the verifier's
clock, give or take ``leeway_seconds``. Whether the scopes suffice is the policy layer's question.

Each refusal raises ``InvalidToken`` with a ``reason`` of ``Reason``.

The key set is fetched with httpx2 on first use and kept ``jwks_cache_seconds``. A token naming an
unknown ``kid`` triggers one refetch (key rotation), at most once per
``jwks_refetch_cooldown_seconds``, so that a stream of forged ``kid`` values cannot turn the
gateway into a flood of requests against the issuer. A fetch is bounded by
``jwks_timeout_seconds`` overall and by ``MAX_JWKS_BYTES``; a failed one never raises past
``verify``: the previous keys stay in use, and with none the answer is ``jwks_unavailable``.

The key set is fetched through the address policy (R-13.5, ``toolcrib.addresses``): the issuer is
the operator's choice, so a private address is fine, but a link-local or cloud-metadata one (the
issuer's URL, or where its name resolves) is never called; that fetch fails like any other.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Self

import anyio
import httpx2
import jwt

from toolcrib.addresses import AddressPolicy, guarded_client
from toolcrib.errors import ToolcribError

__all__ = [
    "MAX_JWKS_BYTES",
    "InvalidToken",
    "JWTSettings",
    "JWTVerifier",
    "Reason",
    "VerifiedToken",
    "looks_like_jwt",
]

MAX_JWKS_BYTES = 512 * 1024
MAX_TOKEN_CHARS = 16 * 1024

Reason = Literal[
    "bad_signature",
    "wrong_audience",
    "wrong_issuer",
    "expired",
    "not_yet_valid",
    "malformed",
    "unknown_key",
    "jwks_unavailable",
]

_MESSAGES: dict[Reason, str] = {
    "bad_signature": "the token's signature does not verify",
    "wrong_audience": "the token was not issued for this resource",
    "wrong_issuer": "the token was not issued by the configured issuer",
    "expired": "the token has expired",
    "not_yet_valid": "the token is not valid yet",
    "malformed": "the token is not a well-formed access token",
    "unknown_key": "the token was signed with a key the issuer does not publish",
    "jwks_unavailable": "the issuer's keys could not be fetched",
}


class InvalidToken(ToolcribError):
    """An OAuth access token was refused; ``reason`` says why (one of ``Reason``)."""

    code: ClassVar[str] = "invalid_token"

    def __init__(self, reason: Reason, message: str | None = None) -> None:
        super().__init__(message or _MESSAGES[reason])
        self.reason: Reason = reason


@dataclass(frozen=True, slots=True)
class JWTSettings:
    """Where tokens come from and how they are checked."""

    issuer: str
    audience: str
    """This resource's URL: ``aud`` must name it exactly."""
    jwks_url: str
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    leeway_seconds: int = 30
    jwks_cache_seconds: int = 300
    jwks_timeout_seconds: float = 5.0
    jwks_refetch_cooldown_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """What a verified access token says about its bearer."""

    subject: str
    scopes: frozenset[str]
    expires_at: int | None
    token_id: str | None
    claims: Mapping[str, Any]


_JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has the shape of a JWS compact JWT (and so is not a personal token)."""
    if len(token) > MAX_TOKEN_CHARS or not _JWT_SHAPE.fullmatch(token):
        return False
    try:
        return "alg" in jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return False


class JWTVerifier:
    """Verifies access tokens of one issuer; share one per process (it caches the key set)."""

    def __init__(
        self,
        settings: JWTSettings,
        *,
        http: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        addresses: AddressPolicy | None = None,
    ) -> None:
        self._settings = settings
        self._addresses = addresses or AddressPolicy()
        self._http = http
        self._owns_http = http is None
        self._clock = clock
        self._lock = anyio.Lock()
        self._jwks: dict[str, dict[str, Any]] = {}
        self._keys: dict[tuple[str, str], jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._last_fetch_failed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client, if this verifier made it."""
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None

    async def verify(self, token: str) -> VerifiedToken:
        """The verified token, or ``InvalidToken`` with its reason."""
        header = _header(token)
        alg = header.get("alg")
        if alg not in self._settings.algorithms:
            raise InvalidToken("bad_signature", f"the algorithm {alg!r} is not accepted")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("unknown_key", "the token names no key (kid)")
        key = self._key(kid, alg, await self._jwk(kid))
        claims = self._decode(token, key, alg)
        self._check_times(claims)
        return _verified(claims)

    # --- keys ---------------------------------------------------------------------------------

    async def _jwk(self, kid: str) -> dict[str, Any]:
        now = self._clock()
        if self._fetched_at is None or now - self._fetched_at >= self._settings.jwks_cache_seconds:
            await self._refresh(now)
        if kid not in self._jwks:
            await self._refresh(now)
        if kid in self._jwks:
            return self._jwks[kid]
        if self._last_fetch_failed:
            raise InvalidToken("jwks_unavailable")
        raise InvalidToken("unknown_key", f"the issuer publishes no key {kid!r}")

    async def _refresh(self, now: float) -> None:
        """Fetch the key set, unless another fetch happened within the cooldown."""
        async with self._lock:
            cooldown = self._settings.jwks_refetch_cooldown_seconds
            if self._attempted_at is not None and now - self._attempted_at < cooldown:
                return
            self._attempted_at = now
            try:
                jwks = await self._fetch()
            except _FetchFailed:
                self._last_fetch_failed = True
                return
            self._jwks, self._keys = jwks, {}
            self._fetched_at, self._last_fetch_failed = now, False

    async def _fetch(self) -> dict[str, dict[str, Any]]:
        if self._http is None:
            self._http = guarded_client(self._addresses, follow_redirects=False)
        try:
            body = await _get_bounded(
                self._http, self._settings.jwks_url, self._settings.jwks_timeout_seconds
            )
            return _parse_jwks(json.loads(body))
        except (httpx2.HTTPError, httpx2.InvalidURL, httpx2.StreamError, OSError, ValueError) as exc:
            raise _FetchFailed from exc

    def _key(self, kid: str, alg: str, jwk: dict[str, Any]) -> jwt.PyJWK:
        """The key for ``alg``; a key bound to another algorithm does not verify this token."""
        known = self._keys.get((kid, alg))
        if known is not None:
            return known
        if jwk.get("alg", alg) != alg:
            raise InvalidToken("bad_signature", f"key {kid!r} is not a {alg} key")
        try:
            key = jwt.PyJWK(jwk, algorithm=alg)
        except jwt.PyJWTError as exc:
            raise InvalidToken("bad_signature", f"key {kid!r} is not a {alg} key") from exc
        self._keys[(kid, alg)] = key
        return key

    # --- claims -------------------------------------------------------------------------------

    def _decode(self, token: str, key: jwt.PyJWK, alg: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self._settings.audience,
                issuer=self._settings.issuer,
                # Time claims are checked against the injected clock by ``_check_times``.
                options={
                    "require": ["exp", "iss", "aud", "sub"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(_reason(exc)) from exc

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now, leeway = self._clock(), self._settings.leeway_seconds
        exp, nbf = claims["exp"], claims.get("nbf")
        if not _is_number(exp) or (nbf is not None and not _is_number(nbf)):
            raise InvalidToken("malformed", "exp and nbf must be numbers")
        if now > exp + leeway:
            raise InvalidToken("expired")
        if nbf is not None and now + leeway < nbf:
            raise InvalidToken("not_yet_valid")


class _FetchFailed(Exception):
    """The key set could not be fetched or read."""


async def _get_bounded(http: httpx2.AsyncClient, url: str, seconds: float) -> bytes:
    """The body of a 200 answer, within ``seconds`` in all and ``MAX_JWKS_BYTES``."""
    body = bytearray()
    headers = {"Accept": "application/json"}
    with anyio.fail_after(seconds):
        async with http.stream("GET", url, headers=headers, timeout=seconds) as response:
            if response.status_code != 200:
                raise ValueError(f"JWKS answered HTTP {response.status_code}")
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_JWKS_BYTES:
                    raise ValueError("JWKS document too large")
    return bytes(body)


def _parse_jwks(document: Any) -> dict[str, dict[str, Any]]:
    """The usable signing keys of a JWKS document, by ``kid``."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWKS document")
    keys: dict[str, dict[str, Any]] = {}
    for jwk in document["keys"]:
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
            continue
        if jwk.get("use", "sig") != "sig":
            continue
        try:
            jwt.PyJWK(jwk)
        except jwt.PyJWTError:
            continue  # a key type this verifier cannot use; the others still serve
        keys[jwk["kid"]] = jwk
    return keys


def _header(token: str) -> dict[str, Any]:
    if len(token) > MAX_TOKEN_CHARS:
        raise InvalidToken("malformed", "the token is too long")
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise InvalidToken("malformed") from exc


def _reason(exc: jwt.PyJWTError) -> Reason:
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return _MISSING_CLAIM_REASONS.get(exc.claim, "malformed")
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return reason
    return "malformed"


_MISSING_CLAIM_REASONS: dict[str, Reason] = {"aud": "wrong_audience", "iss": "wrong_issuer"}
_REASONS: tuple[tuple[type[jwt.PyJWTError], Reason], ...] = (
    (jwt.InvalidSignatureError, "bad_signature"),
    (jwt.InvalidAlgorithmError, "bad_signature"),
    (jwt.InvalidKeyError, "bad_signature"),
    (jwt.InvalidAudienceError, "wrong_audience"),
    (jwt.InvalidIssuerError, "wrong_issuer"),
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid"),
)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """Scopes from ``scope`` (space-separated, RFC 9068) and ``scp`` (a list or a string)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(v for v in value if isinstance(v, str) and v)
    return frozenset(found)


def _verified(claims: dict[str, Any]) -> VerifiedToken:
    subject, jti = claims.get("sub"), claims.get("jti")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("malformed", "the token names no subject")
    return VerifiedToken(
        subject=subject,
        scopes=_scopes(claims),
        expires_at=int(claims["exp"]),
        token_id=jti if isinstance(jti, str) else None,
        claims=MappingProxyType(claims),
    )
