"""Sign-in at the organization's OpenID Provider (R-7.7): discovery, the code flow with PKCE,
``state`` and ``nonce``, the code exchange and the ID token checked.

The JOSE work is Authlib's: ``joserfc`` (Authlib's JOSE library) verifies the signature against
the provider's JWKS, and Authlib's ``CodeIDToken`` claims class checks ``iss``, ``aud`` (= our
client id, ``azp`` when several), ``exp``, ``iat``, ``nonce`` and ``at_hash`` as OIDC Core §3.1.3.7
lists them. The HTTP is httpx2 (the project's one HTTP stack), every fetch bounded in bytes and
time: a provider that answers garbage, too much or too slowly is refused, never waited on.

This module is imported only when an identity provider is configured, so that start-up and
``toolcrib --help`` never load Authlib (``tests/web/test_startup_imports.py``).

Every refusal is a :class:`SignInRefused` whose ``error`` is the name RFC 6749 (§4.1.2.1, §5.2)
or OIDC Core give it, and whose ``reason`` says exactly what failed.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio
import httpx2
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from toolcrib.errors import SignInRefused

__all__ = ["MAX_DOCUMENT_BYTES", "Answer", "Discovery", "OIDCClient", "OIDCConfig", "Pending"]

logger = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 256 * 1024
"""Largest discovery document, key set or token answer read from the provider."""
FETCH_SECONDS = 10.0
CACHE_SECONDS = 3600.0
JWKS_REFETCH_COOLDOWN_SECONDS = 30.0
PENDING_SECONDS = 600.0
"""How long a started sign-in may take at the provider."""
LEEWAY_SECONDS = 60
_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric algorithms only: never ``none``, never an HMAC keyed with the client secret."""
_TOKEN_ERRORS = {"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client"}
_GOOGLE = "https://accounts.google.com"
_GOOGLE_OFFLINE = {"access_type": "offline", "prompt": "consent"}
"""Google lists no ``offline_access``: its refresh token is asked for so, and ``prompt=consent``
makes it give one at every sign-in, not only at the first."""
_AUTHORIZE_ERRORS = {
    "invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type",
    "invalid_scope", "server_error", "temporarily_unavailable", "interaction_required",
    "login_required", "account_selection_required", "consent_required",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class OIDCConfig:
    issuer: str
    client_id: str
    client_secret: str | None
    scopes: str
    redirect_uri: str


@dataclass(frozen=True, slots=True)
class Discovery:
    """What toolcrib uses of the provider's ``/.well-known/openid-configuration``."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    auth_methods: tuple[str, ...]
    algorithms: tuple[str, ...]
    userinfo_endpoint: str | None = None
    scopes: tuple[str, ...] = ()
    """``scopes_supported``: ``offline_access`` is asked for when it is listed."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the provider said at a sign-in or a refresh: the verified claims, and its refresh token
    (at a refresh: only a rotated, new one), to be kept sealed."""

    claims: dict[str, Any]
    refresh_token: str | None


@dataclass(frozen=True, slots=True)
class Pending:
    """A started sign-in, kept sealed in the browser until the provider sends the person back."""

    state: str
    nonce: str
    verifier: str
    next: str
    started_at: float

    def to_json(self) -> dict[str, Any]:
        return {"s": self.state, "n": self.nonce, "v": self.verifier, "x": self.next, "t": self.started_at}

    @classmethod
    def from_json(cls, data: object) -> Pending | None:
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in "snvx"):
            return None
        if not isinstance(data.get("t"), int | float):
            return None
        return cls(data["s"], data["n"], data["v"], data["x"], float(data["t"]))


def _refused(error: str, reason: str, message: str) -> SignInRefused:
    logger.warning("OIDC sign-in refused: %s (%s)", error, reason)
    return SignInRefused(error, reason, message)


class OIDCClient:
    """One per process: it caches the provider's discovery document and key set."""

    def __init__(
        self,
        config: OIDCConfig,
        *,
        clock: Callable[[], float] = time.time,
        transport: httpx2.AsyncBaseTransport | None = None,
        fetch_seconds: float = FETCH_SECONDS,
    ) -> None:
        self.config = config
        self._clock = clock
        self._fetch_seconds = fetch_seconds
        self._http = httpx2.AsyncClient(transport=transport, follow_redirects=False, timeout=fetch_seconds)
        self._lock = anyio.Lock()
        self._discovery: tuple[float, Discovery] | None = None
        self._keys: tuple[float, KeySet] | None = None
        self._keys_attempted_at: float | None = None

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- the two legs of the flow ------------------------------------------------------------

    async def begin(self, next_path: str) -> tuple[str, Pending]:
        """The provider's authorize URL for a new sign-in, and what to keep until it comes back."""
        found = await self.discovery()
        pending = Pending(
            generate_token(32), generate_token(32), generate_token(64), next_path, self._clock()
        )
        query = {
            "response_type": "code",
            "client_id": self.config.client_id,
            "redirect_uri": self.config.redirect_uri,
            "scope": _scopes(self.config.scopes, found),
            "state": pending.state,
            "nonce": pending.nonce,
            "code_challenge": create_s256_code_challenge(pending.verifier),
            "code_challenge_method": "S256",
            **(_GOOGLE_OFFLINE if found.issuer == _GOOGLE else {}),
        }
        joiner = "&" if urlsplit(found.authorization_endpoint).query else "?"
        return found.authorization_endpoint + joiner + urlencode(query), pending

    def check_state(self, params: Mapping[str, str], pending: Pending | None) -> str:
        """The authorization code, once ``state`` matches the started sign-in (RFC 6749 §10.12)
        and the provider sent no error (§4.1.2.1)."""
        if pending is None:
            raise _refused(
                "invalid_request", "no_pending_sign_in", "This sign-in was not started here, or it expired."
            )
        if not hmac.compare_digest(params.get("state", ""), pending.state):
            raise _refused(
                "invalid_request", "state_mismatch", "The state does not match the sign-in started here."
            )
        if self._clock() - pending.started_at > PENDING_SECONDS:
            raise _refused("invalid_request", "sign_in_expired", "The sign-in took too long; start again.")
        if params.get("error"):
            error = params["error"] if params["error"] in _AUTHORIZE_ERRORS else "server_error"
            raise _refused(error, "provider_error", "The identity provider did not sign you in.")
        iss = params.get("iss")
        if iss is not None and iss != self.config.issuer:  # RFC 9207: a mix-up of providers
            raise _refused(
                "invalid_request", "wrong_issuer", "The answer came from another identity provider."
            )
        code = params.get("code")
        if not code:
            raise _refused("invalid_request", "no_code", "The identity provider sent no authorization code.")
        return code

    async def finish(self, code: str, pending: Pending) -> Answer:
        """Exchange the code and verify the ID token; its claims and the provider's refresh token."""
        found = await self.discovery()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.config.redirect_uri,
            "code_verifier": pending.verifier,
        }
        answer = await self._token(found, form, "code_refused")
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise _refused("invalid_token", "no_id_token", "The identity provider returned no ID token.")
        access_token = answer.get("access_token")
        claims = await self._verify(
            found, id_token, pending.nonce, access_token if isinstance(access_token, str) else None
        )
        return Answer(claims, _text(answer.get("refresh_token")))

    async def refresh(self, refresh_token: str, subject: str, wanted: str) -> Answer:
        """Ask the provider again about the person (R-7.11): its token endpoint refreshes
        ``refresh_token``; the claims are the new ID token's (signature, ``iss``, ``aud``, ``exp``
        checked as at sign-in), with the userinfo endpoint's when there is no ID token or it lacks
        the ``wanted`` claim. SignInRefused ``invalid_grant`` when the provider refuses the token or
        the access token (the person or their consent is gone); any other error means it could not
        vouch now."""
        found = await self.discovery()
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        answer = await self._token(found, form, "refresh_refused")
        access, id_token = _text(answer.get("access_token")), _text(answer.get("id_token"))
        claims = await self._verify(found, id_token, None, access) if id_token else {}
        if wanted not in claims and access and found.userinfo_endpoint:
            claims = {**await self._userinfo(found.userinfo_endpoint, access), **claims}
        if not claims:
            raise _refused("server_error", "no_claims", "The identity provider said nothing about you.")
        if claims.get("sub") != subject:
            raise _refused("invalid_grant", "subject_changed", "The identity provider names someone else.")
        claims.setdefault("iss", found.issuer)
        rotated = _text(answer.get("refresh_token"))
        return Answer(claims, rotated if rotated != refresh_token else None)

    async def _userinfo(self, url: str, access_token: str) -> dict[str, Any]:
        """OIDC Core §5.3: the claims about the person; 401 means the provider refuses them."""
        headers = {"Accept": "application/json", "Authorization": f"Bearer {access_token}"}
        status, body = await self._bounded("GET", url, "userinfo", headers=headers)
        if status in (401, 403):
            raise _refused("invalid_grant", "userinfo_refused", "The identity provider no longer knows you.")
        if status != 200:
            raise _refused(
                "server_error", "userinfo_status", f"The identity provider answered HTTP {status}."
            )
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise _refused("server_error", "userinfo_invalid", "The userinfo answer is not JSON.") from exc
        if not isinstance(doc, dict):
            raise _refused("server_error", "userinfo_invalid", "The userinfo answer is not an object.")
        return doc

    # --- discovery and keys ------------------------------------------------------------------

    async def discovery(self) -> Discovery:
        """The provider's discovery document, fetched once an hour at most (OIDC Discovery §4)."""
        async with self._lock:
            now = self._clock()
            if self._discovery is not None and now - self._discovery[0] < CACHE_SECONDS:
                return self._discovery[1]
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            doc = await self._get_json(url, "discovery")
            found = _parse_discovery(doc, self.config.issuer)
            self._discovery = (now, found)
            return found

    async def _key_set(self, found: Discovery, *, again: bool) -> KeySet:
        async with self._lock:
            now = self._clock()
            fresh = self._keys is not None and now - self._keys[0] < CACHE_SECONDS
            cooling = (
                self._keys_attempted_at is not None
                and now - self._keys_attempted_at < JWKS_REFETCH_COOLDOWN_SECONDS
            )
            if self._keys is not None and (cooling if again else fresh):
                return self._keys[1]
            self._keys_attempted_at = now
            doc = await self._get_json(found.jwks_uri, "jwks")
            try:
                keys = KeySet.import_key_set(doc)  # type: ignore[arg-type]
            except (JoseError, ValueError, TypeError, KeyError) as exc:
                raise _refused(
                    "server_error", "jwks_invalid", "The identity provider's keys cannot be read."
                ) from exc
            self._keys = (now, keys)
            return keys

    # --- HTTP, bounded ------------------------------------------------------------------------

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        return await self._json("GET", url, what, headers={"Accept": "application/json"})

    async def _json(self, method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        status, body = await self._bounded(method, url, what, **kwargs)
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise _refused(
                "server_error",
                f"{what}_invalid",
                "The identity provider answered something that is not JSON.",
            ) from exc
        if not isinstance(doc, dict):
            raise _refused(
                "server_error", f"{what}_invalid", "The identity provider answered something unexpected."
            )
        if status != 200 and what != "token":
            raise _refused("server_error", f"{what}_status", f"The identity provider answered HTTP {status}.")
        doc["__status"] = status
        return doc

    async def _bounded(self, method: str, url: str, what: str, **kwargs: Any) -> tuple[int, bytes]:
        body = bytearray()
        try:
            with anyio.fail_after(self._fetch_seconds):
                async with self._http.stream(method, url, **kwargs) as response:
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > MAX_DOCUMENT_BYTES:
                        raise _TooLarge
                    async for chunk in response.aiter_bytes():  # decoded: a compressed bomb counts whole
                        body += chunk
                        if len(body) > MAX_DOCUMENT_BYTES:
                            raise _TooLarge
                    return response.status_code, bytes(body)
        except _TooLarge as exc:
            raise _refused(
                "server_error", f"{what}_too_large", "The identity provider's answer is too large."
            ) from exc
        except TimeoutError as exc:
            raise _refused(
                "temporarily_unavailable", f"{what}_timeout", "The identity provider did not answer in time."
            ) from exc
        except (httpx2.HTTPError, httpx2.InvalidURL, httpx2.StreamError, OSError) as exc:
            raise _refused(
                "temporarily_unavailable", f"{what}_unreachable", "The identity provider cannot be reached."
            ) from exc

    # --- the token endpoint and the ID token ---------------------------------------------------

    async def _token(self, found: Discovery, form: dict[str, str], reason: str) -> dict[str, Any]:
        """A token request (the code exchange of RFC 6749 §4.1.3 and RFC 7636 §4.5, or a refresh,
        §6), authenticated as the provider says."""
        kwargs: dict[str, Any] = {"headers": {"Accept": "application/json"}}
        secret = self.config.client_secret
        if (
            secret
            and "client_secret_basic" not in found.auth_methods
            and "client_secret_post" in found.auth_methods
        ):
            form |= {"client_id": self.config.client_id, "client_secret": secret}
        elif secret:  # RFC 6749 §2.3.1: each part form-encoded before the Basic encoding
            kwargs["auth"] = httpx2.BasicAuth(_form(self.config.client_id), _form(secret))
        else:
            form["client_id"] = self.config.client_id
        answer = await self._json("POST", found.token_endpoint, "token", data=form, **kwargs)
        if answer.pop("__status") != 200:
            error = answer.get("error")
            named = error if isinstance(error, str) and error in _TOKEN_ERRORS else "server_error"
            what = "refresh token" if form["grant_type"] == "refresh_token" else "authorization code"
            raise _refused(named, reason, f"The identity provider refused the {what}.")
        return answer

    async def _verify(
        self, found: Discovery, id_token: str, nonce: str | None, access_token: str | None
    ) -> dict[str, Any]:
        """OIDC Core §3.1.3.7: signature by the provider's key, then iss, aud, exp, nonce (none at
        a refresh, §12.2)."""
        registry = JWSRegistry(algorithms=list(found.algorithms))
        try:
            try:
                token = jwt.decode(id_token, await self._key_set(found, again=False), registry=registry)
            except InvalidKeyIdError:  # the provider rotated its keys
                token = jwt.decode(id_token, await self._key_set(found, again=True), registry=registry)
        except JoseError as exc:
            raise _refused(
                "invalid_token", "bad_signature", "The ID token's signature does not verify."
            ) from exc
        params = {"client_id": self.config.client_id, **({"nonce": nonce} if nonce is not None else {})}
        if access_token is not None:
            params["access_token"] = access_token
        options = {
            "iss": {"essential": True, "value": found.issuer},
            "aud": {"essential": True, "value": self.config.client_id},
        }
        claims = CodeIDToken(token.claims, token.header, options, params)
        try:
            claims.validate(now=int(self._clock()), leeway=LEEWAY_SECONDS)
        except ExpiredTokenError as exc:
            raise _refused("invalid_token", "expired", "The ID token has expired.") from exc
        except JoseError as exc:
            reason = _claim_reason(exc)
            raise _refused("invalid_token", reason, f"The ID token was refused ({reason}).") from exc
        return dict(claims)


class _TooLarge(Exception):
    pass


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _scopes(configured: str, found: Discovery) -> str:
    """The configured scopes, with ``offline_access`` when the provider offers it: its refresh
    token is what lets toolcrib ask it again about the person at each refresh (R-7.11)."""
    scopes = configured.split()
    if "offline_access" in found.scopes and "offline_access" not in scopes:
        scopes.append("offline_access")
    return " ".join(scopes)


def _form(value: str) -> str:
    return urlencode({"": value})[1:]


def _claim_reason(exc: JoseError) -> str:
    claim = getattr(exc, "claim", None) or ""
    return {
        "aud": "wrong_audience",
        "azp": "wrong_audience",
        "iss": "wrong_issuer",
        "nonce": "nonce_mismatch",
        "exp": "expired",
        "iat": "not_yet_valid",
        "nbf": "not_yet_valid",
        "at_hash": "at_hash_mismatch",
    }.get(claim, f"invalid_claim_{claim}" if claim else "invalid_claims")


def _parse_discovery(doc: Mapping[str, Any], issuer: str) -> Discovery:
    """The endpoints toolcrib needs; the document's ``issuer`` must be exactly the configured one
    (OIDC Discovery §4.3), and S256 offered when the methods are listed at all."""
    if doc.get("issuer") != issuer:
        raise _refused(
            "server_error", "discovery_issuer_mismatch", "The identity provider names another issuer."
        )
    urls = [_endpoint(doc, name) for name in ("authorization_endpoint", "token_endpoint", "jwks_uri")]
    methods = doc.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise _refused(
            "server_error", "pkce_unsupported", "The identity provider does not offer PKCE with S256."
        )
    auth = doc.get("token_endpoint_auth_methods_supported")
    auth_methods = tuple(m for m in auth if isinstance(m, str)) if isinstance(auth, list) else ()
    algs = doc.get("id_token_signing_alg_values_supported")
    offered = tuple(a for a in algs if a in _ALGORITHMS) if isinstance(algs, list) else ("RS256",)
    if not offered:
        message = "The identity provider signs ID tokens with no algorithm toolcrib accepts."
        raise _refused("server_error", "no_usable_algorithm", message)
    userinfo = _url(doc.get("userinfo_endpoint"))  # optional: without it, a refresh needs an ID token
    listed = doc.get("scopes_supported")
    scopes = tuple(x for x in listed if isinstance(x, str)) if isinstance(listed, list) else ()
    return Discovery(
        issuer, urls[0], urls[1], urls[2], auth_methods or ("client_secret_basic",), offered, userinfo, scopes
    )


def _endpoint(doc: Mapping[str, Any], name: str) -> str:
    """An https URL (plain http on loopback only: a test or a provider on this machine)."""
    value = _url(doc.get(name))
    if value is None:
        message = f"The identity provider's {name} is missing or invalid."
        raise _refused("server_error", "discovery_invalid", message)
    return value


def _url(value: object) -> str | None:
    parts = urlsplit(value) if isinstance(value, str) and len(value) <= 2048 else None
    local = (
        parts is not None and parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")
    )
    if parts is None or not (parts.scheme == "https" or local):
        return None
    assert isinstance(value, str)
    return value
