"""OAuth 2.1 at a remote upstream, with the MCP SDK's client auth (#14).

The SDK's ``OAuthClientProvider`` (an httpx2 ``Auth``) does the protocol: discovery from the
upstream's 401 (``WWW-Authenticate`` -> protected-resource metadata -> authorization-server
metadata), dynamic client registration (or the configured client), PKCE, the code exchange and
refresh. This module gives it what a headless gateway needs:

- ``StoredGrant``, its ``TokenStorage``: tokens and client registration sealed in the store like
  the connection's other secrets (R-13.3), so every process and replica uses the same grant.
- a refresh *before* expiry: the SDK would only refresh once its clock says the token is dead, and
  a token loaded from storage would never refresh at all; here the access token is renewed a
  margin (at most a tenth of its lifetime) ahead, whether it was just issued or loaded.
- ``session_auth``: the provider of a long-lived session never waits for a person. When the grant
  is gone (a refresh refused, nothing stored), the SDK reaches its redirect step and the session
  is told the connection needs authorizing again (``AuthorizationNeeded``).
- ``Authorizer``: interactive flows, one per (connection, member) at a time, each started by one
  person (R-13.6). The SDK's redirect handler captures the authorize URL and gives it to the vault,
  which keeps it sealed with its ``state`` as pending in the store and answers an opaque start link
  for the person who started the flow (the URL itself never leaves the gateway but as the redirect
  of the one browser that confirmed that link); its callback handler waits (bounded by the pending
  lifetime) for ``/oauth/callback`` to deliver the code through the store, so the callback may
  reach any process sharing the database (the command line that started the flow waits for it the
  same way).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from anyio.abc import TaskGroup
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from toolcrib.addresses import AddressPolicy, guarded_client
from toolcrib.errors import AddressRefused
from toolcrib.upstream.spec import OAuthBinding, OnDone

__all__ = [
    "AuthorizationNeeded",
    "AuthorizationRefused",
    "Authorizer",
    "StoredGrant",
    "session_auth",
]

logger = logging.getLogger(__name__)

_POLL_SECONDS = 0.25  # how often a waiting flow looks for its answer in the store (woken at once in-process)
_PROBE = {"jsonrpc": "2.0", "id": "toolcrib-authorize", "method": "ping"}


class AuthorizationNeeded(Exception):
    """The upstream grant is gone; a person must authorize the connection again."""


def refresh_at(expires_in: int | str | None, margin: float, now: float) -> float | None:
    """When to renew an access token living ``expires_in`` seconds from ``now``."""
    if expires_in is None:
        return None
    life = int(expires_in)
    return now + life - min(margin, life / 10)


class StoredGrant:
    """The SDK's ``TokenStorage`` over the store, sealed with the connection secrets' key."""

    def __init__(self, binding: OAuthBinding) -> None:
        self._b = binding

    async def get_tokens(self) -> OAuthToken | None:
        tokens, _ = await self._b.vault.tokens()
        return OAuthToken.model_validate(tokens) if tokens is not None else None

    async def refresh_by(self) -> float | None:
        return (await self._b.vault.tokens())[1]

    async def set_tokens(self, tokens: OAuthToken) -> None:
        renew = refresh_at(tokens.expires_in, self._b.refresh_margin, time.time())
        await self._b.vault.save_tokens(tokens.model_dump(mode="json", exclude_none=True), renew)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._b.client_id:  # a client registered by hand at the provider
            return OAuthClientInformationFull(
                client_id=self._b.client_id,
                client_secret=self._b.client_secret,
                redirect_uris=[self._b.redirect_uri],
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="client_secret_post" if self._b.client_secret else "none",
            )
        client = await self._b.vault.client()
        return OAuthClientInformationFull.model_validate(client) if client is not None else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._b.vault.save_client(client_info.model_dump(mode="json", exclude_none=True))


@dataclass
class _Context(OAuthContext):
    margin: float = 60.0

    def update_token_expiry(self, token: OAuthToken) -> None:
        self.token_expiry_time = refresh_at(token.expires_in, self.margin, time.time())


class _Provider(OAuthClientProvider):
    """The SDK's provider, renewing tokens a margin before they expire, loaded ones included."""

    def __init__(
        self,
        binding: OAuthBinding,
        server_url: str,
        redirect_handler: Callable[[str], Coroutine[Any, Any, None]],
        callback_handler: Callable[[], Coroutine[Any, Any, AuthorizationCodeResult]],
    ) -> None:
        self._grant = StoredGrant(binding)
        metadata = OAuthClientMetadata(
            redirect_uris=[binding.redirect_uri],
            client_name="toolcrib",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=binding.scope,
        )
        super().__init__(server_url, metadata, self._grant, redirect_handler, callback_handler)
        base = self.context
        self.context = _Context(
            **{f.name: getattr(base, f.name) for f in fields(OAuthContext)}, margin=binding.refresh_margin
        )

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = await self._grant.refresh_by()

    async def _refresh_token(self) -> httpx2.Request:
        """Renew with the newest refresh token stored: another process or replica sharing the
        grant may have renewed (and rotated it) since this one loaded it."""
        stored = await self._grant.get_tokens()
        if stored is not None and stored.refresh_token:
            self.context.current_tokens = stored
        return await super()._refresh_token()


class _SessionProvider(_Provider):
    """A session's provider: when the upstream refuses the access token before it expired (revoked,
    keys rotated), one renewal with the refresh token is tried and the same request sent again, as
    the request was refused before the upstream acted on it. Only then is a person needed."""

    def __init__(self, binding: OAuthBinding, server_url: str, on_needed: Callable[[], None]) -> None:
        async def refuse(_url: str) -> None:
            raise AuthorizationNeeded(binding.account)

        async def never() -> AuthorizationCodeResult:  # pragma: no cover - refuse() raised first
            raise AuthorizationNeeded(binding.account)

        super().__init__(binding, server_url, refuse, never)
        self._account = binding.account
        self._on_needed = on_needed

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        inner = super()._auth_flow(request)
        try:
            outgoing = await inner.__anext__()
            while True:
                response = yield outgoing
                outgoing = await inner.asend(response)
        except StopAsyncIteration:
            return
        except AuthorizationNeeded:
            pass
        finally:
            await inner.aclose()
        async with self.context.lock:
            renewed = False
            if self.context.can_refresh_token():
                answer = yield await self._refresh_token()
                renewed = await self._handle_refresh_response(answer)
            if not renewed:
                self._on_needed()
                raise AuthorizationNeeded(self._account)
            self._add_auth_header(request)
        yield request


def session_auth(binding: OAuthBinding, server_url: str, on_needed: Callable[[], None]) -> httpx2.Auth:
    """The auth of a long-lived session: renews on its own, never waits for a person; ``on_needed``
    is told when only a person can help."""
    return _SessionProvider(binding, server_url, on_needed)


@dataclass
class _Flow:
    binding: OAuthBinding
    starter: str  # the member who started it: the only one shown its link
    link: str | None = None  # the start link's token, from the vault
    state: str | None = None
    expires_at: float = 0.0
    ok: bool = False
    failure: str | None = None
    finished: bool = False  # the protocol part is over (the gateway may still be acting on it)
    started: anyio.Event = field(default_factory=anyio.Event)  # the URL is known, or the flow ended
    done: anyio.Event = field(default_factory=anyio.Event)
    wake: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # cancelled when replaced

    def live(self) -> bool:
        ended = self.done.is_set() or self.finished
        return not ended and self.link is not None and self.expires_at > time.time()


class Authorizer:
    """The interactive authorization flows of this process."""

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        connect_timeout: float,
        on_done: OnDone | None = None,
        addresses: AddressPolicy | None = None,
    ) -> None:
        self._tg = task_group
        self._addresses = addresses or AddressPolicy()
        """Discovery, registration and token requests go only where it allows (R-13.5)."""
        self._connect_timeout = connect_timeout
        self._on_done = on_done
        self._flows: dict[tuple[str, str], _Flow] = {}

    async def begin(self, binding: OAuthBinding, server_url: str, starter: str) -> str | None:
        """The start link token of a flow for ``binding`` started by ``starter``: the one pending
        when they started it, or a new one, which replaces (cancels) a flow someone else started.

        None when no person is needed (the stored grant works) or the flow failed before it had a
        URL (the upstream cannot be reached, its metadata is refused); ``on_done`` says which.
        """
        key = (binding.account, binding.member)
        flow = self._flows.get(key)
        if flow is None or not flow.live() or flow.binding != binding or flow.starter != starter:
            old, flow = flow, _Flow(binding, starter)
            self._flows[key] = flow
            self._tg.start_soon(self._run, flow, server_url)
            if old is not None:  # its link dies with it: wait until its pending row is gone
                old.scope.cancel()
                with anyio.move_on_after(self._connect_timeout):
                    await old.done.wait()
        with anyio.move_on_after(self._connect_timeout):
            await flow.started.wait()
        return flow.link

    def pending_link(self, account: str, member: str, starter: str) -> str | None:
        """The start link token of the live flow of (``account``, ``member``) when ``starter``
        started it; None for anyone else (R-13.6)."""
        flow = self._flows.get((account, member))
        live = flow is not None and flow.live() and flow.starter == starter
        return flow.link if live and flow is not None else None

    async def ended(self, account: str, member: str, wait_seconds: float) -> bool | None:
        """Wait (bounded) for the flow of (``account``, ``member``) to end: whether it succeeded, or
        None when this process runs no such flow or it did not end in time."""
        flow = self._flows.get((account, member))
        if flow is None:
            return None
        with anyio.move_on_after(wait_seconds):
            await flow.done.wait()
        return flow.ok if flow.done.is_set() else None

    async def delivered(self, state: str, wait_seconds: float) -> bool | None:
        """Wake the flow of ``state`` in this process and wait (bounded) until it ends: whether it
        succeeded, or None when no flow of this process waits for ``state`` or it did not end."""
        for flow in self._flows.values():
            if flow.state == state:
                flow.wake.set()
                with anyio.move_on_after(wait_seconds):
                    await flow.done.wait()
                return flow.ok if flow.done.is_set() else None
        return None

    async def _run(self, flow: _Flow, server_url: str) -> None:
        b = flow.binding
        try:
            with flow.scope, anyio.fail_after(b.pending_seconds + 4 * self._connect_timeout):
                provider = _Provider(b, server_url, self._redirect(flow), self._callback(flow))
                http_client = guarded_client(self._addresses, auth=provider, timeout=self._connect_timeout)
                async with http_client as http:
                    headers = {"Accept": "application/json, text/event-stream"}
                    response = await http.post(server_url, json=_PROBE, headers=headers)
                flow.ok = response.status_code not in (401, 403)
                if not flow.ok:
                    flow.failure = f"the upstream still refused the grant (HTTP {response.status_code})"
            if flow.scope.cancelled_caught:
                flow.failure = "a newer authorization replaced it"
        except Exception as exc:
            flow.failure = _why(exc)
            logger.info("authorizing %s at its upstream failed: %s", b.account, flow.failure)
        finally:
            flow.finished = True
            with anyio.CancelScope(shield=True):
                if flow.state is not None:
                    await b.vault.drop_pending(flow.state)
                try:
                    current = self._flows.get((b.account, b.member)) is flow
                    if self._on_done is not None and (current or flow.ok):
                        await self._on_done(b, flow.ok, flow.failure)
                except Exception:
                    logger.exception("after authorizing %s", b.account)
                finally:  # ended only once the gateway acted on it: a waiter then reads the outcome
                    flow.done.set()
                    flow.started.set()

    def _redirect(self, flow: _Flow) -> Callable[[str], Coroutine[Any, Any, None]]:
        async def redirect(url: str) -> None:
            state = parse_qs(urlsplit(url).query).get("state", [""])[0]
            b = flow.binding
            now = time.time()
            link = await b.vault.open_pending(state, b.pending_seconds, url=url, starter=flow.starter)
            flow.link, flow.state, flow.expires_at = link, state, now + b.pending_seconds
            flow.started.set()

        return redirect

    def _callback(self, flow: _Flow) -> Callable[[], Coroutine[Any, Any, AuthorizationCodeResult]]:
        async def callback() -> AuthorizationCodeResult:
            b = flow.binding
            assert flow.state is not None
            while time.time() < flow.expires_at:
                answer = await b.vault.take_answer(flow.state)
                if answer is not None:
                    if answer.get("error"):
                        raise AuthorizationRefused(str(answer["error"])[:100])
                    return AuthorizationCodeResult.model_validate(answer)
                with anyio.move_on_after(_POLL_SECONDS):
                    await flow.wake.wait()
                flow.wake = anyio.Event()
            raise TimeoutError("the authorization link expired before it was used")

        return callback


class AuthorizationRefused(Exception):
    """The authorization server sent the person back with an error (``access_denied``, ...)."""


def _why(exc: BaseException) -> str:
    """A failure of a flow in words safe to show: no token, code or upstream body in it."""
    if isinstance(exc, AuthorizationRefused):
        return f"the provider refused the authorization ({exc})"
    if isinstance(exc, TimeoutError):
        return "the authorization link expired before it was used"
    if isinstance(exc, AddressRefused):  # the host and why, in our own words
        return exc.message
    if isinstance(exc, httpx2.HTTPError):
        return f"the upstream or its authorization server could not be reached ({type(exc).__name__})"
    return f"the authorization did not complete ({type(exc).__name__})"
