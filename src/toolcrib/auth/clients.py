"""Who a client is: registered metadata within bounds, client ID metadata documents, redirect URIs.

A client comes from dynamic registration (RFC 7591) or is named by the https URL of its client ID
metadata document (the MCP authorization spec). Both are untrusted input: sizes, counts and URL
schemes are bounded here, and a metadata document is fetched in one function,
:func:`fetch_client_metadata`, with a size and a time limit over the HTTP client it is given, so
the gateway passes the one that applies R-13.5's address rules.
"""

from __future__ import annotations

import json
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
    "StoredClient",
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

    def __init__(self, reason: str, *, bad_uri: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.bad_uri = bad_uri
        """One redirect URI is invalid (RFC 7591 ``invalid_redirect_uri``), not the metadata."""


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


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ClientMetadataError(f"the client metadata document is larger than {limit} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > limit:
            raise ClientMetadataError(f"the client metadata document is larger than {limit} bytes")
    return bytes(body)


async def fetch_client_metadata(
    url: str,
    http: httpx2.AsyncClient,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    seconds: float = FETCH_SECONDS,
) -> dict[str, Any]:
    """Fetch and check the client ID metadata document at ``url``.

    ``http`` decides which addresses may be reached (the integrator passes R-13.5's guarded client);
    the whole fetch, a slowly dribbled body included, ends after ``seconds``, and a body
    over ``max_bytes`` is abandoned. The document must name ``url`` itself as its ``client_id``.
    """
    try:
        with anyio.fail_after(seconds):
            async with http.stream("GET", url, headers={"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    raise ClientMetadataError(f"the client metadata document answered {response.status_code}")
                body = await _read_capped(response, max_bytes)
    except TimeoutError as exc:
        raise ClientMetadataError(f"the client metadata document took over {seconds:g} s") from exc
    except AddressRefused as exc:  # link-local, cloud metadata (or private when denied)
        raise ClientMetadataError(
            f"the client metadata document is at a refused address: {exc.message}"
        ) from exc
    except httpx2.HTTPError as exc:
        raise ClientMetadataError(
            f"the client metadata document could not be fetched ({type(exc).__name__})"
        ) from exc
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise ClientMetadataError("the client metadata document is not JSON") from exc
    if not isinstance(document, dict):
        raise ClientMetadataError("the client metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise ClientMetadataError("the document's client_id differs from its URL")
    return document


def client_from_document(url: str, document: dict[str, Any], scopes: str) -> StoredClient:
    """A public client (no secret: a document cannot hold one) from its checked document."""
    values = {k: v for k, v in document.items() if k not in ("client_secret", "client_secret_expires_at")}
    values.update(client_id=url, token_endpoint_auth_method="none")
    values.setdefault("grant_types", ["authorization_code", "refresh_token"])
    values["scope"] = scopes
    try:
        client = StoredClient.model_validate(values)
    except ValidationError as exc:
        raise ClientMetadataError("the client metadata document is not valid client metadata") from exc
    check_metadata(client)
    return client
