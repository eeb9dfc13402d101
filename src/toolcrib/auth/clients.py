"""Who a client is: registered metadata within bounds, client ID metadata documents, redirect URIs.

A client comes from dynamic registration (RFC 7591) or is named by the https URL of its client ID
metadata document (the MCP authorization spec). Both are untrusted input: sizes, counts and URL
schemes are bounded here, and a metadata document is fetched in one function,
:func:`fetch_client_metadata`, with a size and a time limit over the HTTP client it is given, so
the gateway passes the one that applies R-13.5's address rules. Anyone can make the gateway
fetch a document (R-13.7), so the fetch follows no redirect (a redirect is a refused client), is
https only (http on loopback only when a development setting allows it), and the gateway's client
refuses private addresses; a refused URL is remembered a few minutes (:class:`FailedDocuments`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyUrl, Field, ValidationError

from toolcrib.errors import AddressRefused

__all__ = [
    "MAX_CLIENT_NAME",
    "MAX_DOCUMENT_BYTES",
    "MAX_REDIRECT_URIS",
    "MAX_REDIRECT_URI_LENGTH",
    "ClientMetadataError",
    "FailedDocuments",
    "StoredClient",
    "check_document_scheme",
    "check_metadata",
    "fetch_client_metadata",
    "is_document_url",
    "is_loopback",
]

MAX_DOCUMENT_BYTES = 64 * 1024
FETCH_SECONDS = 5.0
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
MAX_CLIENT_NAME = 200
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_NEVER_SCHEMES = frozenset({"javascript", "data", "file", "vbscript", "blob", "about"})


class ClientMetadataError(Exception):
    """A client's metadata that toolcrib refuses; ``reason`` is safe to show to the client."""

    def __init__(self, reason: str, *, bad_uri: bool = False, code: str = "invalid_client_metadata") -> None:
        super().__init__(reason)
        self.reason = reason
        self.bad_uri = bad_uri
        """One redirect URI is invalid (RFC 7591 ``invalid_redirect_uri``), not the metadata."""
        self.code = code
        """Why, as a code a page or a test can name (``document_redirected``, ``document_not_https``,
        ``document_address_refused``, ``document_unreachable``, ...)."""


def is_loopback(url: str) -> bool:
    """An ``http`` URL on a loopback host, where a native client listens on any port (RFC 8252)."""
    parts = urlsplit(url)
    return parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK_HOSTS


def is_document_url(client_id: str) -> bool:
    """A client id that names a client ID metadata document: https with a path (http on loopback)."""
    parts = urlsplit(client_id)
    secure = parts.scheme == "https" or is_loopback(client_id)
    return secure and bool(parts.hostname) and parts.path not in ("", "/")


def _same_except_port(registered: str, asked: str) -> bool:
    a, b = urlsplit(registered), urlsplit(asked)
    return (a.scheme, a.hostname, a.path, a.query) == (b.scheme, b.hostname, b.path, b.query)


class StoredClient(OAuthClientInformationFull):
    """A client as the store keeps it: its secret only as a hash, redirect URIs matched exactly
    except a loopback one, whose port may differ (RFC 8252 §7.3)."""

    secret_sha256: str | None = Field(default=None, exclude=True)

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            return super().validate_redirect_uri(None)
        asked = str(redirect_uri)
        for registered in self.redirect_uris or []:
            text = str(registered)
            if text == asked or (is_loopback(text) and is_loopback(asked) and _same_except_port(text, asked)):
                return redirect_uri
        raise InvalidRedirectUriError("redirect_uri is not one this client registered")


def _check_redirect_uri(uri: str) -> None:
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        raise ClientMetadataError(
            f"a redirect URI is longer than {MAX_REDIRECT_URI_LENGTH} characters", bad_uri=True
        )
    parts = urlsplit(uri)
    if parts.fragment:
        raise ClientMetadataError("a redirect URI must not have a fragment", bad_uri=True)
    if parts.scheme in _NEVER_SCHEMES or not parts.scheme:
        raise ClientMetadataError(f"redirect URI scheme {parts.scheme!r} is not allowed", bad_uri=True)
    if parts.scheme == "http" and not is_loopback(uri):
        raise ClientMetadataError(
            "an http redirect URI must be on a loopback host (else https)", bad_uri=True
        )


def check_metadata(info: OAuthClientInformationFull) -> None:
    """The bounds every client's metadata must keep, however it reached toolcrib."""
    uris = [str(u) for u in info.redirect_uris or []]
    if not uris:
        raise ClientMetadataError("a client needs at least one redirect URI")
    if len(uris) > MAX_REDIRECT_URIS:
        raise ClientMetadataError(f"at most {MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        _check_redirect_uri(uri)
    if info.client_name is not None and len(info.client_name) > MAX_CLIENT_NAME:
        raise ClientMetadataError(f"client_name is longer than {MAX_CLIENT_NAME} characters")


def _too_large(limit: int) -> ClientMetadataError:
    return ClientMetadataError(
        f"the client metadata document is larger than {limit} bytes", code="document_too_large"
    )


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def check_document_scheme(url: str, *, allow_loopback: bool) -> None:
    """R-13.7: a document is fetched over https; over http only from a loopback host, and only
    when the development setting (``allow_loopback``) says so."""
    scheme = urlsplit(url).scheme
    if scheme == "https" or (allow_loopback and is_loopback(url)):
        return
    raise ClientMetadataError(
        "a client metadata document is fetched over https only", code="document_not_https"
    )


def _status_refusal(status: int) -> ClientMetadataError:
    if 300 <= status < 400:  # never followed, wherever it points
        return ClientMetadataError(
            f"the client metadata document answered a redirect ({status}); redirects are not followed",
            code="document_redirected",
        )
    return ClientMetadataError(f"the client metadata document answered {status}", code="document_status")


async def fetch_client_metadata(
    url: str,
    http: httpx2.AsyncClient,
    *,
    allow_loopback: bool = False,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    seconds: float = FETCH_SECONDS,
) -> dict[str, Any]:
    """Fetch and check the client ID metadata document at ``url``.

    ``http`` decides which addresses may be reached (the gateway passes its guarded client with
    R-13.7's policy: no private address); https only, plain http on loopback only with
    ``allow_loopback``; one request, its redirect never followed (a redirect is a refusal); the
    whole fetch, a slowly dribbled body included, ends after ``seconds``, and a body over
    ``max_bytes`` is abandoned. The document must name ``url`` itself as its ``client_id``.
    """
    check_document_scheme(url, allow_loopback=allow_loopback)
    body = await _fetch(url, http, max_bytes, seconds)
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise ClientMetadataError(
            "the client metadata document is not JSON", code="document_not_json"
        ) from exc
    if not isinstance(document, dict):
        raise ClientMetadataError(
            "the client metadata document is not a JSON object", code="document_not_json"
        )
    if document.get("client_id") != url:
        raise ClientMetadataError("the document's client_id differs from its URL", code="client_id_mismatch")
    return document


async def _fetch(url: str, http: httpx2.AsyncClient, max_bytes: int, seconds: float) -> bytes:
    headers = {"Accept": "application/json"}
    try:
        with anyio.fail_after(seconds):
            async with http.stream("GET", url, headers=headers, follow_redirects=False) as response:
                if response.status_code != 200:
                    raise _status_refusal(response.status_code)
                return await _read_capped(response, max_bytes)
    except TimeoutError as exc:
        raise ClientMetadataError(
            f"the client metadata document took over {seconds:g} s", code="document_slow"
        ) from exc
    except AddressRefused as exc:  # private, loopback, link-local, cloud metadata
        raise ClientMetadataError(
            f"the client metadata document is at a refused address: {exc.message}",
            code="document_address_refused",
        ) from exc
    except httpx2.HTTPError as exc:
        raise ClientMetadataError(
            f"the client metadata document could not be fetched ({type(exc).__name__})",
            code="document_unreachable",
        ) from exc


class FailedDocuments:
    """Document URLs whose fetch failed, remembered ``seconds`` so that asking again does not
    fetch again (per process; at most ``size`` URLs, the oldest forgotten first)."""

    def __init__(self, *, seconds: float = 300.0, size: int = 10_000) -> None:
        self.seconds = seconds
        self.size = size
        self._failed: OrderedDict[str, tuple[float, ClientMetadataError]] = OrderedDict()

    def get(self, url: str, now: float) -> ClientMetadataError | None:
        """The remembered refusal of ``url``, or None (never failed, or long enough ago)."""
        entry = self._failed.get(url)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._failed[url]
            return None
        return entry[1]

    def add(self, url: str, error: ClientMetadataError, now: float) -> None:
        self._failed.pop(url, None)
        self._failed[url] = (now + self.seconds, error)
        while len(self._failed) > self.size:
            self._failed.popitem(last=False)

    def __len__(self) -> int:
        return len(self._failed)


def client_from_document(url: str, document: dict[str, Any], scopes: str) -> StoredClient:
    """A public client (no secret: a document cannot hold one) from its checked document."""
    values = {k: v for k, v in document.items() if k not in ("client_secret", "client_secret_expires_at")}
    values.update(client_id=url, token_endpoint_auth_method="none")
    values.setdefault("grant_types", ["authorization_code", "refresh_token"])
    values["scope"] = scopes
    try:
        client = StoredClient.model_validate(values)
    except ValidationError as exc:
        raise ClientMetadataError(
            "the client metadata document is not valid client metadata", code="invalid_client_metadata"
        ) from exc
    check_metadata(client)
    return client
