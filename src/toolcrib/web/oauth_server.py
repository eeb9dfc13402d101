"""The authorization server's HTTP endpoints (R-7.7): the SDK's handlers, with toolcrib's rules in front.

``/.well-known/oauth-authorization-server`` (RFC 8414, issuer = the gateway's public URL),
``/authorize``, ``/token``, ``/register``, ``/revoke``. In front of the SDK's handlers:

- a per-address rate limit on ``/authorize``, ``/token``, ``/register`` and ``/revoke`` (R-7.10);
- ``/authorize`` alone fetches a client ID metadata document (``/token`` and ``/revoke`` know only
  stored clients, so they trigger no fetch and store nothing: #32), and until the client and its
  redirect URI are verified an error is an HTML page for the person, never a redirect (RFC 9700
  §4.11.2); after that, errors go back to the redirect URI as RFC 6749 §4.1.2.1 says;
- PKCE S256 only: a request without ``code_challenge_method`` means ``plain`` (RFC 7636 §4.3),
  which the SDK refuses with ``invalid_request`` as it refuses an explicit ``plain``;
- ``resource`` (RFC 8707) at ``/token``: another resource than this gateway's ``/mcp`` or ``/api``,
  or another than the code or refresh token was consented for, is ``invalid_target``;
- registration bounded: 16 KiB of body, ``oauth_clients_per_address`` a day per address;
- client secrets compared by hash (the store never holds one in clear).
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import importlib
import sys
from typing import Any
from urllib.parse import unquote, urlencode

import anyio.to_thread
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull
from pydantic import AnyHttpUrl, AnyUrl, TypeAdapter, ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from toolcrib.auth.clients import ClientMetadataError
from toolcrib.gateway.identity.authorization import Provider, resource_path, secret_matches
from toolcrib.policy.scopes import SCOPES
from toolcrib.settings import Settings
from toolcrib.web.address_limits import AddressLimiter, address_bucket, client_address, too_many

__all__ = ["MAX_REGISTRATION_BYTES", "authorization_server_routes"]

MAX_REGISTRATION_BYTES = 16 * 1024
_URL: TypeAdapter[AnyUrl] = TypeAdapter(AnyUrl)
_PAGES = "toolcrib.web.auth_pages"
_registering_from: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "registering_from", default=None
)


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication, against a secret stored as its SHA-256."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        client_id = form.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        client = await self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        method = client.token_endpoint_auth_method
        if method == "none":
            return client
        given = _secret(request, form.get("client_secret"), method, client_id)
        expected = getattr(client, "secret_sha256", None)
        if not expected or not given or not secret_matches(expected, given):
            raise AuthenticationError("Invalid client_secret")
        return client


def _secret(request: Request, posted: Any, method: str | None, client_id: str) -> str | None:
    if method == "client_secret_post":
        return posted if isinstance(posted, str) else None
    header = request.headers.get("authorization", "")
    if method != "client_secret_basic" or not header.startswith("Basic "):
        raise AuthenticationError("Missing or invalid client authentication")
    try:
        basic_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise AuthenticationError("Invalid Basic authentication header") from exc
    if unquote(basic_id) != client_id:
        raise AuthenticationError("Client ID mismatch in Basic auth")
    return unquote(secret)


def _cors(app: ASGIApp, methods: list[str]) -> ASGIApp:
    return CORSMiddleware(
        app, allow_origins=["*"], allow_methods=methods, allow_headers=["mcp-protocol-version"]
    )


def _oauth_error(error: str, description: str, status: int = 400) -> Response:
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status, headers={"Cache-Control": "no-store"})


async def _error_page(code: str, message: str) -> Response:
    """An error shown to the person in the browser: 400, HTML, no redirect (RFC 9700 §4.11.2).
    The pages' module (and Jinja2) is imported at its first use, in a worker thread (#12)."""
    pages = sys.modules.get(_PAGES)
    if pages is None:
        pages = await anyio.to_thread.run_sync(importlib.import_module, _PAGES)
    answer: Response = pages.page("refused.html", status=400, code=code, message=message)
    return answer


async def _unverified(request: Request, provider: Provider) -> Response | None:
    """The error page when ``/authorize`` names no known client (a metadata document not fetched
    or refused included) or a ``redirect_uri`` it did not register; None when both are verified."""
    client_id = request.query_params.get("client_id")
    if not client_id:
        return await _error_page("invalid_request", "The request names no client (client_id).")
    try:
        client = await provider.client_for_authorize(client_id)
    except ClientMetadataError as exc:
        return await _error_page("invalid_client", f"This app is not known here: {exc.reason} ({exc.code}).")
    raw = request.query_params.get("redirect_uri")
    try:
        client.validate_redirect_uri(None if raw is None else _URL.validate_python(raw))
    except (ValidationError, InvalidRedirectUriError):
        return await _error_page(
            "invalid_request",
            "The address to send you back to (redirect_uri) is not one this app registered.",
        )
    return None


def authorization_server_routes(
    settings: Settings, provider: Provider, limiter: AddressLimiter
) -> list[Route]:
    """The routes of the authorization server, mounted at the root of the gateway."""
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=sorted(SCOPES), default_scopes=sorted(SCOPES)
    )
    metadata = build_metadata(
        AnyHttpUrl(settings.resource_url), None, registration, RevocationOptions(enabled=True)
    )
    metadata.client_id_metadata_document_supported = True
    metadata.authorization_response_iss_parameter_supported = True
    document = metadata.model_dump(mode="json", exclude_none=True)
    document["issuer"] = settings.resource_url  # exactly the string clients compare (RFC 8414 §3.3)
    authenticator = HashedSecretAuthenticator(provider)
    authorize_handler = AuthorizationHandler(provider)
    token_handler = TokenHandler(provider, authenticator)
    register_handler = RegistrationHandler(provider, registration)
    revoke_handler = RevocationHandler(provider, authenticator)
    provider.registering_from = _registering_from.get

    async def well_known(request: Request) -> Response:
        return JSONResponse(document, headers={"Cache-Control": "public, max-age=300"})

    async def authorize(request: Request) -> Response:
        if (wait := limiter.retry_after("authorize", client_address(request))) is not None:
            return too_many(wait)
        if (refused := await _unverified(request, provider)) is not None:
            return refused
        if "code_challenge_method" not in request.query_params:  # RFC 7636 §4.3: absent means plain
            query = [*request.query_params.multi_items(), ("code_challenge_method", "plain")]
            scope = {**request.scope, "query_string": urlencode(query).encode()}
            request = Request(scope, request.receive)
        answer: Response = await authorize_handler.handle(request)
        return answer

    async def token(request: Request) -> Response:
        if (wait := limiter.retry_after("token", client_address(request))) is not None:
            return too_many(wait)
        form = await request.form()
        resource = form.get("resource")
        if isinstance(resource, str):  # RFC 8707: ours, and the one the person consented to
            wanted = resource_path(resource, settings.resource_url)
            credential = form.get("code") or form.get("refresh_token")
            bound = await provider.bound_resource(form.get("grant_type"), credential)
            if wanted is None or (bound is not None and bound != wanted):
                return _oauth_error("invalid_target", "not the resource these tokens were granted for")
        answer: Response = await token_handler.handle(request)
        return answer

    async def register(request: Request) -> Response:
        address = address_bucket(client_address(request))  # an IPv6 /64 counts as one address
        if (wait := limiter.retry_after("register", address)) is not None:
            return too_many(wait)
        if await _too_large(request):
            return _oauth_error(
                "invalid_client_metadata", f"registration is limited to {MAX_REGISTRATION_BYTES} bytes", 413
            )
        since = provider.clock() - 86400
        if await provider.registrations_since(address, since) >= settings.oauth_clients_per_address:
            return too_many(3600)
        marker = _registering_from.set(address)
        try:
            return await register_handler.handle(request)
        finally:
            _registering_from.reset(marker)

    async def revoke(request: Request) -> Response:
        if (wait := limiter.retry_after("revoke", client_address(request))) is not None:
            return too_many(wait)
        return await revoke_handler.handle(request)

    return [
        Route(
            "/.well-known/oauth-authorization-server",
            _cors(_endpoint(well_known), ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route("/authorize", authorize, methods=["GET"]),
        Route("/token", _cors(_endpoint(token), ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        Route("/register", _cors(_endpoint(register), ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
        Route("/revoke", _cors(_endpoint(revoke), ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"]),
    ]


def _endpoint(fn: Any) -> ASGIApp:
    from starlette.routing import request_response

    app: ASGIApp = request_response(fn)
    return app


async def _too_large(request: Request) -> bool:
    """Whether the registration body passes its bound, read at most that far (nothing kept)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_REGISTRATION_BYTES:
        return True
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_REGISTRATION_BYTES:
            return True
    request._body = bytes(body)  # the SDK's handler reads request.body() next
    return False
