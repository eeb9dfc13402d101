"""The HTTP face: ``/mcp`` (Streamable HTTP), ``/api`` (REST), ``/admin`` (the console), ``/healthz``,
``/metrics``, RFC 9728."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from toolcrib import tracing
from toolcrib.auth.metadata import protected_resource_metadata, www_authenticate
from toolcrib.errors import Unauthenticated
from toolcrib.gateway.control import ControlPlane
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.discovery.surface import SURFACES
from toolcrib.gateway.identity import idp
from toolcrib.gateway.identity.authorization import Provider
from toolcrib.gateway.process import open_gateway
from toolcrib.logs import RequestLog
from toolcrib.policy.gates import Principal
from toolcrib.policy.scopes import SCOPES
from toolcrib.settings import Settings
from toolcrib.web.address_limits import AddressLimiter
from toolcrib.web.admin import admin_mount
from toolcrib.web.auth_routes import auth_routes
from toolcrib.web.body_size import BodyLimit
from toolcrib.web.disconnect import cancel_on_disconnect
from toolcrib.web.mcp import PRINCIPAL_KEY, build_mcp_server
from toolcrib.web.metrics import metrics_router
from toolcrib.web.oauth_callback import oauth_callback
from toolcrib.web.oauth_server import authorization_server_routes
from toolcrib.web.origins import OriginPolicy
from toolcrib.web.proxies import ForwardedHeaders, TrustedProxies
from toolcrib.web.rest import METADATA_PATH, openapi_document, rest_routes
from toolcrib.web.telemetry import Telemetry
from toolcrib.web.tracing import SECRET_PATHS, TraceRequests

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


class Authenticated:
    """Origin check (DNS-rebinding protection, R-2.4 and R-2.6) and bearer check in front of ``inner``.

    The principal is put in the ASGI scope; it is read again on every request, never cached.
    """

    def __init__(self, inner: ASGIApp, settings: Settings, resource: str | None = None) -> None:
        self._inner = inner
        self._settings = settings
        self._resource = resource  # RFC 8707: the OAuth access tokens issued for it pass, no others
        self._origins = OriginPolicy(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        origin = request.headers.get("origin")
        if origin and not self._origins.allows(origin, request.headers.get("host"), request.url.scheme):
            body = {"error": "origin_not_allowed", "message": "this browser Origin is not allowed"}
            await JSONResponse(body, 403)(scope, receive, send)
            return
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else None
        try:
            with tracing.step("authenticate"):  # its token read is a database span naming the step
                principal = await request.app.state.gateway.bearers.authenticate(
                    token, resource=self._resource
                )
        except Unauthenticated as exc:
            metadata_url = self._settings.resource_url + METADATA_PATH
            error = "invalid_token" if token else None
            challenge = www_authenticate(metadata_url, error=error, description=exc.message)
            body = {"error": error or "unauthorized", "message": exc.message}
            await JSONResponse(body, 401, headers={"WWW-Authenticate": challenge})(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        scope["user"] = _session_user(principal)
        await self._inner(scope, receive, send)


def _session_user(principal: Principal) -> AuthenticatedUser:
    """The identity the MCP SDK binds a stateful session to: the member who opened it.

    The SDK answers 404 to a request naming a session another identity opened (GET, POST and
    DELETE alike); without ``scope["user"]`` every caller would be the same anonymous owner.
    """
    token = AccessToken(
        token=principal.grant_id,
        client_id=principal.member,
        subject=principal.member,
        scopes=sorted(principal.scopes),
    )
    return AuthenticatedUser(token)


class _SessionManagerApp:
    def __init__(self, stateless: bool) -> None:
        self._stateless = stateless

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager: StreamableHTTPSessionManager = scope["app"].state.session_manager
        if self._stateless and scope.get("method") == "POST":
            await cancel_on_disconnect(manager.handle_request, scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


def create_app(settings: Settings, *, gateway: Gateway | None = None) -> Starlette:
    """The ASGI app. With ``gateway`` given (tests), the caller owns its lifetime."""
    traced = tracing.configure()  # only the OTEL_* variables turn traces on
    telemetry = Telemetry()
    provider = Provider(
        base_url=settings.resource_url,
        access_seconds=settings.oauth_access_token_seconds,
        refresh_days=settings.oauth_refresh_token_days,
    )
    limiter = AddressLimiter(settings.signin_per_minute)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with _gateway(settings, gateway) as gw:
            _bind_authorization_server(provider, gw, app.state)
            app.state.oauth_provider, app.state.address_limiter = provider, limiter
            control = ControlPlane(gw)
            manager = StreamableHTTPSessionManager(
                build_mcp_server(gw, control, telemetry),
                json_response=settings.stateless,
                stateless=settings.stateless,
                max_request_body_size=settings.max_body_bytes,
            )
            app.state.gateway, app.state.control, app.state.session_manager = gw, control, manager
            app.state.telemetry = telemetry
            surface = SURFACES[settings.surface]
            telemetry.name_tools([surface.search, surface.execute, *(n for n, _ in control.all_operations())])
            try:
                async with manager.run():
                    yield
            finally:
                oidc = getattr(app.state, "oidc", None)  # the identity provider's client, once used
                if oidc is not None:
                    await oidc.aclose()
                if traced:  # the spans still buffered leave now (bounded by the flush's timeout)
                    await anyio.to_thread.run_sync(tracing.flush)

    async def resource_metadata(request: Request) -> Response:
        # This gateway is the authorization server of its /mcp; an external issuer's JWTs
        # stay accepted, so it is named too.
        servers = [settings.resource_url, *([settings.oauth_issuer] if settings.oauth_issuer else [])]
        doc: dict[str, Any] = protected_resource_metadata(
            settings.resource_url + "/mcp", servers, sorted(SCOPES)
        )
        return Response(json.dumps(doc), media_type="application/json")

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(request.app.state.control, settings.resource_url))

    api = Router(routes=rest_routes(settings.control_prefix, PRINCIPAL_KEY))
    metrics_app = metrics_router(settings, telemetry, PRINCIPAL_KEY)
    return Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/metrics", Authenticated(metrics_app, settings), methods=["GET"]),
            Route(METADATA_PATH, resource_metadata),
            Route(METADATA_PATH + "/mcp", resource_metadata),
            Route("/api/openapi.json", openapi),
            Route("/oauth/callback", oauth_callback, methods=["GET"]),
            *_oidc_routes(settings),
            *authorization_server_routes(settings, provider, limiter),
            *auth_routes(),
            Route(
                "/mcp",
                Authenticated(_SessionManagerApp(settings.stateless), settings, "/mcp"),
                methods=["GET", "POST", "DELETE"],
            ),
            Route("/api/approvals/{approval_id}", Authenticated(api, settings, "/api"), methods=["GET"]),
            Route("/api/{resource}/{operation}", Authenticated(api, settings, "/api"), methods=["POST"]),
            Route("/admin", _to_console),
            admin_mount(),
        ],
        middleware=[
            *([Middleware(TraceRequests, principal_key=PRINCIPAL_KEY)] if traced else []),
            Middleware(ForwardedHeaders, proxies=TrustedProxies(settings.trusted_proxies)),
            Middleware(RequestLog, principal_key=PRINCIPAL_KEY, secret_paths=SECRET_PATHS),
            Middleware(BodyLimit, limit=settings.max_body_bytes),
        ],
        lifespan=lifespan,
    )


def _bind_authorization_server(provider: Provider, gw: Gateway, state: Any) -> None:
    """The authorization server of /mcp on the open gateway's store, key and clock."""
    provider.bind(gw.store.db, gw.store.box, gw.store.clock)
    # client ID metadata documents are fetched at anyone's request: R-13.7's strict address policy
    provider.use_addresses(gw.addresses, loopback_documents=gw.settings.oauth_allow_loopback_client_documents)
    # mapped again at refresh, from what the identity provider says now
    provider.member_check = partial(idp.refresh_member, gw, client=partial(_oidc_client, state))


def _oidc_client(state: Any) -> Any:
    """The process's identity provider client (None when none is configured)."""
    from toolcrib.web import oidc

    return oidc.client_of(state) if state.gateway.settings.oidc_issuer else None


async def healthz(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    states: dict[str, int] = {}
    for row in gw.catalog.connections.values():
        states[row.status] = states.get(row.status, 0) + 1
    meaning: dict[str, Any] = {"meaning": "up", "model_loaded": gw.meaning.loaded}
    if not gw.meaning.up:
        meaning = {"meaning": "down", "reason": gw.meaning.reason or "unknown"}
    return JSONResponse({"status": "ok", "connections": states, **meaning})


def _oidc_routes(settings: Settings) -> list[Route]:
    """``/auth/oidc/start`` and ``/auth/oidc/callback`` when an identity provider is configured; its
    module (and Authlib) is imported only then, so start-up without one stays fast."""
    if not settings.oidc_issuer:
        return []
    from toolcrib.web import oidc

    return oidc.routes(settings)


async def _to_console(request: Request) -> Response:
    return RedirectResponse("/admin/", 307)


@asynccontextmanager
async def _gateway(settings: Settings, given: Gateway | None) -> AsyncIterator[Gateway]:
    if given is not None:
        yield given
        return
    async with open_gateway(settings) as gw:
        yield gw
