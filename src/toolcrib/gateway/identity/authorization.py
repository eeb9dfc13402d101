"""toolcrib as the OAuth 2.1 authorization server of its own ``/mcp`` (R-7.7).

(It lives in ``gateway`` rather than ``auth``: it reads and writes the store, and only the
gateway layer may; ``auth.clients`` holds its pure parts, client metadata and its fetch.)

The MCP SDK's handlers (``mcp.server.auth.handlers``) speak the protocol; this provider answers
them from the store, so every replica sees every client, code and token. The person's part (sign
in, consent) happens on toolcrib's ``/auth`` pages: :meth:`authorize` sends the browser there with
the request sealed, and :meth:`complete` turns the person's answer into a code.

- codes: 256 random bits, stored hashed, five minutes, single use; a second use revokes the grant
  the first issued (RFC 6749 §10.5);
- access tokens ``tca_…``: opaque, hashed, short-lived, bound to one resource (RFC 8707): this
  gateway's ``/mcp``, or its admin API ``/api`` when the client asked for it (``resource``) and the
  person ticked it on the consent page; every other face refuses them (``identity.authenticate``);
- refresh tokens ``tcr_…``: rotated on every use; a spent one presented again revokes its grant;
- revocation (RFC 7009) revokes the whole grant;
- a grant is made from the sign-in session that consented (R-7.11): within its scopes, ending with
  it, revoked with it; a refresh is refused once anything up that chain ended.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from toolcrib.addresses import AddressPolicy, guarded_client
from toolcrib.auth.clients import (
    ClientMetadataError,
    FailedDocuments,
    StoredClient,
    check_metadata,
    client_from_document,
    fetch_client_metadata,
    is_document_url,
)
from toolcrib.errors import ConfigError, SignInRefused
from toolcrib.policy.scopes import SCOPES
from toolcrib.store import oauth_server as store
from toolcrib.store.crypto import SecretBox
from toolcrib.store.database import Database
from toolcrib.store.members import hash_token

__all__ = [
    "API",
    "CODE_SECONDS",
    "CONSENT_SECONDS",
    "MCP",
    "ConsentRequest",
    "GrantToken",
    "Provider",
    "resource_ok",
    "resource_path",
    "secret_matches",
]

logger = logging.getLogger(__name__)


def secret_matches(expected: str, given: str) -> bool:
    """Whether ``given`` is the client secret stored as the SHA-256 ``expected`` (constant time)."""
    return hmac.compare_digest(expected, hash_token(given))


CODE_SECONDS = 300.0
CONSENT_SECONDS = 600.0
DOCUMENT_FRESH_SECONDS = 3600.0
ALL_SCOPES = " ".join(sorted(SCOPES))
MCP = "/mcp"
API = "/api"


class GrantAccessToken(AccessToken):
    grant_id: str


class GrantRefreshToken(RefreshToken):
    grant_id: str
    grant_ends: float | None = None


GrantToken = GrantAccessToken | GrantRefreshToken


def _stored(row: store.ClientRow, client_id: str) -> StoredClient:
    client = StoredClient.model_validate({**row.info, "client_id": client_id})
    client.secret_sha256 = row.secret_sha256
    return client


def resource_path(resource: str | None, base: str) -> str | None:
    """RFC 8707: the resource of this gateway a token is asked for: ``/mcp`` (its URL, the base URL,
    or none named), ``/api`` (the admin API's URL, named explicitly), else None (not ours)."""
    if resource is None:
        return MCP
    named = resource.rstrip("/")
    if named in (base, base + MCP):
        return MCP
    return API if named == base + API else None


def resource_ok(resource: str | None, base: str) -> bool:
    return resource_path(resource, base) is not None


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """An authorization request waiting for the person, as sealed into the consent link."""

    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    scopes: tuple[str, ...] | None
    state: str | None
    code_challenge: str
    resource: str | None
    nonce: str
    expires_at: float

    def wants_api(self, base: str) -> bool:
        """The client named the admin API as its resource: the person must tick it explicitly."""
        return resource_path(self.resource, base) == API

    def seal(self, box: SecretBox) -> str:
        return box.seal({f: getattr(self, f) for f in self.__dataclass_fields__})

    @classmethod
    def open(cls, box: SecretBox, sealed: str, now: float) -> ConsentRequest | None:
        """The request, or None: tampered with, sealed under another key, or expired."""
        try:
            data = box.open(sealed)
            request = cls(**{**data, "scopes": tuple(data["scopes"]) if data["scopes"] else None})
        except (ConfigError, TypeError, KeyError, ValueError):
            return None
        return request if request.expires_at > now else None


class Provider:
    """The SDK's ``OAuthAuthorizationServerProvider`` over the store."""

    db: Database
    box: SecretBox
    clock: Callable[[], float]

    def __init__(
        self,
        *,
        base_url: str,
        access_seconds: int,
        refresh_days: float,
        http: Callable[[], httpx2.AsyncClient] | None = None,
    ) -> None:
        self.base_url = base_url
        self._access_seconds = access_seconds
        self._refresh_seconds = refresh_days * 86400
        self._loopback_documents = False
        self._http = http or self._documents_client(AddressPolicy())
        self._failed = FailedDocuments()
        self.registering_from: Callable[[], str | None] = lambda: None
        self.member_check: Callable[[str], Awaitable[object]] | None = None
        """Asked at every refresh whether the grant's member may still have one: the identity
        provider's mapping applied again (R-7.8, ``idp.refresh_member``); SignInRefused refuses."""

    def bind(self, db: Database, box: SecretBox, clock: Callable[[], float]) -> None:
        """The store, key and clock of the gateway, once it is open (the app's lifespan)."""
        self.db, self.box, self.clock = db, box, clock

    def use_addresses(self, addresses: AddressPolicy, *, loopback_documents: bool = False) -> None:
        """Client ID metadata documents are fetched through ``addresses`` made strict (R-13.7:
        private, loopback and link-local refused whatever ``deny_private_addresses`` says, checked
        on the resolved address at connect time), loopback and plain http allowed only when
        ``loopback_documents`` (``oauth_allow_loopback_client_documents``, development)."""
        self._loopback_documents = loopback_documents
        self._http = self._documents_client(addresses)

    def _documents_client(self, addresses: AddressPolicy) -> Callable[[], httpx2.AsyncClient]:
        strict = addresses.for_anonymous(allow_loopback=self._loopback_documents)
        return lambda: guarded_client(strict, follow_redirects=False)

    # --- clients --------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client as stored; never fetched here (``/token``, ``/revoke``, the consent page):
        only ``/authorize`` fetches a client ID metadata document (:meth:`client_for_authorize`)."""
        if len(client_id) > 512:
            return None
        row = await store.get_client(self.db, client_id)
        return None if row is None else _stored(row, client_id)

    async def client_for_authorize(self, client_id: str) -> OAuthClientInformationFull:
        """The client ``/authorize`` names: stored, or its metadata document fetched (again after
        an hour) and stored; ClientMetadataError when it is unknown or its document is refused
        (a refused URL is not fetched again for a few minutes)."""
        if len(client_id) > 512:
            raise ClientMetadataError("the client_id is too long", code="unknown_client")
        row = await store.get_client(self.db, client_id)
        if is_document_url(client_id):
            fresh = row is not None and (row.fetched_at or 0) > self.clock() - DOCUMENT_FRESH_SECONDS
            if not fresh:
                return await self._fetch_document(client_id)
        if row is None:
            raise ClientMetadataError("this client is not registered here", code="unknown_client")
        return _stored(row, client_id)

    async def _fetch_document(self, url: str) -> StoredClient:
        failed = self._failed.get(url, self.clock())
        if failed is not None:  # refused a moment ago: not fetched again (#32)
            raise ClientMetadataError(failed.reason, code=failed.code)
        try:
            async with self._http() as http:
                document = await fetch_client_metadata(url, http, allow_loopback=self._loopback_documents)
            client = client_from_document(url, document, ALL_SCOPES)
        except ClientMetadataError as exc:
            logger.warning("client metadata document %s refused: %s", url[:200], exc.reason)
            self._failed.add(url, exc, self.clock())
            raise
        info = client.model_dump(mode="json", exclude_none=True)
        await store.put_client(
            self.db,
            client_id=url,
            kind="cimd",
            info=info,
            secret=None,
            registered_from=None,
            now=self.clock(),
        )
        return client

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        try:
            check_metadata(client_info)
        except ClientMetadataError as exc:
            if exc.bad_uri:
                raise RegistrationError("invalid_redirect_uri", exc.reason) from exc
            raise RegistrationError("invalid_client_metadata", exc.reason) from exc
        assert client_info.client_id is not None
        info = client_info.model_dump(mode="json", exclude_none=True, exclude={"client_secret"})
        await store.put_client(
            self.db,
            client_id=client_info.client_id,
            kind="dcr",
            info=info,
            secret=client_info.client_secret,
            registered_from=self.registering_from(),
            now=self.clock(),
        )

    # --- the browser's part -----------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not resource_ok(params.resource, self.base_url):
            raise AuthorizeError("invalid_target", "tokens here are only for this gateway's /mcp or /api")
        assert client.client_id is not None
        request = ConsentRequest(
            client_id=client.client_id,
            redirect_uri=str(params.redirect_uri),
            redirect_explicit=params.redirect_uri_provided_explicitly,
            scopes=tuple(params.scopes) if params.scopes else None,
            state=params.state,
            code_challenge=params.code_challenge,
            resource=params.resource,
            nonce=secrets.token_urlsafe(18),
            expires_at=self.clock() + CONSENT_SECONDS,
        )
        return f"{self.base_url}/auth/consent?" + urlencode({"request": request.seal(self.box)})

    def open_request(self, sealed: str) -> ConsentRequest | None:
        return ConsentRequest.open(self.box, sealed, self.clock())

    async def remembered_consent(self, member: str, client_id: str) -> frozenset[str] | None:
        """The scopes this member let this client have and asked to be remembered, if any."""
        return await store.get_consent(self.db, member, client_id)

    async def remember_consent(self, member: str, client_id: str, scopes: frozenset[str]) -> None:
        """Remember the scopes this member let this client have, so the next request skips the page."""
        await store.put_consent(self.db, member, client_id, scopes, self.clock())

    async def registrations_since(self, address: str, since: float) -> int:
        """How many clients registered from this address (bucket) since ``since``."""
        return await store.count_registrations(self.db, address, since)

    async def claim_request(self, request: ConsentRequest) -> bool:
        """True once per consent request: a link answered twice is a replay."""
        return await store.claim_once(self.db, "consent:" + request.nonce, request.expires_at)

    async def complete(
        self,
        request: ConsentRequest,
        member: str,
        scopes: frozenset[str],
        *,
        parent: str | None,
        api: bool = False,
    ) -> str:
        """The person agreed: a code for ``scopes``, and where the browser goes with it (RFC 9207 ``iss``).

        ``parent`` is the sign-in session's grant that consented (R-7.11); ``api`` that the person
        ticked the admin API the client asked for (the tokens are then for ``/api``, else ``/mcp``).
        """
        code = secrets.token_urlsafe(32)
        row = store.CodeRow(
            client_id=request.client_id,
            member=member,
            scopes=scopes,
            code_challenge=request.code_challenge,
            redirect_uri=request.redirect_uri,
            redirect_explicit=request.redirect_explicit,
            resource=API if api and request.wants_api(self.base_url) else MCP,
            expires_at=self.clock() + CODE_SECONDS,
            grant_id=None,
            parent=parent,
        )
        await store.insert_code(self.db, code, row)
        return construct_redirect_uri(request.redirect_uri, code=code, state=request.state, iss=self.base_url)

    def refuse(self, request: ConsentRequest, error: str = "access_denied") -> str:
        return construct_redirect_uri(
            request.redirect_uri, error=error, state=request.state, iss=self.base_url
        )

    # --- codes and tokens -------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        if len(authorization_code) > 200:
            return None
        row = await store.load_code(self.db, authorization_code)
        if row is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=sorted(row.scopes),
            expires_at=row.expires_at,
            client_id=row.client_id,
            code_challenge=row.code_challenge,
            redirect_uri=row.redirect_uri,
            redirect_uri_provided_explicitly=row.redirect_explicit,
            resource=row.resource,
            subject=row.member,
        )

    def _new_tokens(self) -> store.IssuedTokens:
        now = self.clock()
        return store.IssuedTokens(
            access="tca_" + secrets.token_urlsafe(32),
            refresh="tcr_" + secrets.token_urlsafe(32),
            access_expires_at=now + self._access_seconds,
            refresh_expires_at=now + self._refresh_seconds,
        )

    def _answer(self, tokens: store.IssuedTokens, scopes: frozenset[str]) -> OAuthToken:
        return OAuthToken(
            access_token=tokens.access,
            token_type="Bearer",
            expires_in=max(0, int(tokens.access_expires_at - self.clock())),
            refresh_token=tokens.refresh,
            scope=" ".join(sorted(scopes)),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        from toolcrib.auth.tokens import new_grant_id

        row = await store.load_code(self.db, authorization_code.code)
        if row is None:
            raise TokenError("invalid_grant", "authorization code does not exist")
        tokens, grant_id = self._new_tokens(), new_grant_id()
        done = await store.exchange_code(
            self.db, authorization_code.code, row, grant_id, tokens, self.clock()
        )
        if done.replayed is not None:
            await self._abuse(row.member, done.replayed or "-", "oauth.code_replayed")
            raise TokenError("invalid_grant", "authorization code was already used; its grant is revoked")
        if done.tokens is None:  # the session that consented ended (revoked, expired)
            raise TokenError("invalid_grant", "the sign-in that consented has ended")
        return self._answer(done.tokens, done.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> GrantRefreshToken | None:
        if not refresh_token.startswith("tcr_") or len(refresh_token) > 200:
            return None
        row = await store.load_refresh(self.db, refresh_token, self.clock())
        if row is None or row.client_id != client.client_id:
            return None
        if row.used_at is not None and row.revoked_at is None:
            await store.revoke_grant(self.db, row.grant_id, self.clock())
            await self._abuse(row.member, row.grant_id, "oauth.refresh_reused")
            return None
        if row.revoked_at is not None or row.status != "active" or not row.chain_live:
            return None
        return GrantRefreshToken(
            token=refresh_token,
            client_id=row.client_id,
            scopes=sorted(row.scopes),
            expires_at=int(row.expires_at) if row.expires_at else None,
            subject=row.member,
            grant_id=row.grant_id,
            grant_ends=row.grant_expires_at,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: GrantRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.member_check is not None and refresh_token.subject:
            try:
                await self.member_check(refresh_token.subject)
            except SignInRefused as exc:  # suspended, removed, unmapped, or not vouched for
                await store.revoke_grant(self.db, refresh_token.grant_id, self.clock())
                raise TokenError("invalid_grant", exc.message) from exc
        tokens = await store.rotate_refresh(
            self.db,
            refresh_token.token,
            refresh_token.grant_id,
            self._new_tokens(),
            self.clock(),
            refresh_token.grant_ends,  # no token outlives its grant, nor the grant its chain
        )
        if tokens is None:
            await self._abuse(refresh_token.subject or "-", refresh_token.grant_id, "oauth.refresh_reused")
            raise TokenError("invalid_grant", "refresh token was already used; its grant is revoked")
        return self._answer(tokens, frozenset(refresh_token.scopes))

    async def load_access_token(self, token: str) -> GrantAccessToken | None:
        if not token.startswith("tca_") or len(token) > 200:
            return None
        row = await store.find_access(self.db, token)
        if row is None or row.revoked_at is not None:
            return None
        if row.expires_at is not None and row.expires_at <= self.clock():
            return None
        return GrantAccessToken(
            token=token,
            client_id=row.client_id or "",
            scopes=sorted(row.scopes),
            expires_at=int(row.expires_at) if row.expires_at else None,
            resource=self.base_url + (row.resource or MCP),
            subject=row.member,
            grant_id=row.grant_id,
        )

    async def bound_resource(self, grant_type: object, credential: object) -> str | None:
        """The resource (``/mcp`` or ``/api``) the code or refresh token presented at ``/token``
        was consented for; None when it is unknown (the token endpoint then says so itself)."""
        if not isinstance(credential, str) or len(credential) > 200:
            return None
        if grant_type == "authorization_code":
            code = await store.load_code(self.db, credential)
            return None if code is None else code.resource or MCP
        if grant_type == "refresh_token" and credential.startswith("tcr_"):
            row = await store.load_refresh(self.db, credential, self.clock())
            return None if row is None else row.resource or MCP
        return None

    async def revoke_token(self, token: GrantAccessToken | GrantRefreshToken) -> None:
        """RFC 7009: either token revokes the grant, so its other token stops too."""
        await store.revoke_grant(self.db, token.grant_id, self.clock())

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted here")

    async def _abuse(self, member: str, grant_id: str, operation: str) -> None:
        logger.warning("oauth: %s (member %s, grant %s): the grant is revoked", operation, member, grant_id)
        await store.audit_admin(
            self.db,
            member=member,
            grant_id=grant_id,
            operation=operation,
            error_code="invalid_grant",
            now=self.clock(),
        )
