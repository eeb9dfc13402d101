"""The guarded transport of :mod:`toolcrib.addresses` (R-13.5): an httpx2 transport whose network
backend resolves the host once per new connection, checks every address with the policy, and
connects to a checked address (see that module's docstring).

Apart from ``addresses`` so that importing the policy does not import httpx2 and httpcore2 (~0.2 s
of every one-shot command, #33); ``addresses`` still names these (``addresses.guarded_client``).
It imports nothing of ``addresses``: the policy is anything with ``addresses_for``.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any, Protocol

import anyio
import httpcore2
import httpx2

from toolcrib.errors import AddressRefused, shown_host

__all__ = ["GuardedBackend", "guarded_client", "guarded_transport"]


class _Policy(Protocol):
    """What the backend asks of an ``addresses.AddressPolicy``."""

    async def addresses_for(self, host: str, port: int) -> list[str]: ...


class _RefusedConnect(AddressRefused, httpx2.ConnectError):
    """AddressRefused raised while connecting: httpx2 code sees the ConnectError it expects."""

    def __init__(self, host: str, why: str) -> None:
        AddressRefused.__init__(self, host, why)


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend, connecting only to addresses the policy allows.

    The host is resolved once per connection; the connection goes to one of the addresses that
    were checked, never to a name resolved again (DNS rebinding). TLS still names the host: the
    pool passes the name as SNI and the request keeps it in ``Host``.
    """

    def __init__(self, policy: _Policy, inner: httpcore2.AsyncNetworkBackend | None = None) -> None:
        self._policy = policy
        self._inner = inner or httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self._checked(host, port, timeout)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def _checked(self, host: str, port: int, seconds: float | None) -> list[str]:
        try:
            with anyio.fail_after(seconds):
                return await self._policy.addresses_for(host, port)
        except AddressRefused as exc:
            raise _RefusedConnect(exc.host, exc.why) from None
        except TimeoutError as exc:
            raise httpcore2.ConnectTimeout(f"resolving {shown_host(host)!r} took too long") from exc
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {shown_host(host)!r}") from exc

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("the gateway connects to URLs, not to local sockets")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class _GuardedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport over a connection pool given the guarded backend (httpx2 builds its pool
    without a way to pass one)."""

    def __init__(
        self,
        backend: GuardedBackend,
        limits: httpx2.Limits,
        *,
        verify: ssl.SSLContext | str | bool = True,
        http2: bool = False,
        retries: int = 0,
    ) -> None:
        # Not AsyncHTTPTransport.__init__: it would build a pool (and an SSL context, ~0.2 s of CA
        # loading) only to be replaced; every method of the class uses ``_pool`` alone.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http2=http2,
            retries=retries,
            network_backend=backend,
        )


def guarded_transport(
    policy: _Policy,
    *,
    limits: httpx2.Limits | None = None,
    backend: GuardedBackend | None = None,
    **options: Any,
) -> httpx2.AsyncHTTPTransport:
    """An httpx2 transport whose every new connection goes through :class:`GuardedBackend`.

    No proxy: a proxy would resolve the host itself, past the check (an explicit transport also
    makes httpx2 ignore ``HTTP_PROXY`` and its kin). ``options``: ``verify``, ``http2``, ``retries``
    as AsyncHTTPTransport takes them.
    """
    chosen = backend or GuardedBackend(policy)
    return _GuardedTransport(chosen, limits or httpx2.Limits(), **options)


def guarded_client(policy: _Policy, **options: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` over :func:`guarded_transport`: the one way to fetch a URL on
    someone's behalf. ``options`` are the client's (auth, headers, timeout, follow_redirects,
    limits, ...); a redirect is checked like any connection."""
    limits = options.pop("limits", None)
    return httpx2.AsyncClient(transport=guarded_transport(policy, limits=limits), **options)
