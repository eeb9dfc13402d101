"""Requests per minute per client address, for the sign-in endpoints (R-7.10).

Guessing a token at the console's sign-in, or hammering ``/authorize``, ``/token``, ``/register``
and the identity provider's callback, costs one request each; these endpoints are limited per
client address (``request.client.host``, which a trusted proxy's address, once configured, is
rewritten to) to ``signin_per_minute``: that many at once, then one more every ``60 / N`` seconds
(the GCRA of ``policy.rate_limits``). The limiter lives in the process (per replica): it bounds a
brute force's pace, it is not an account lockout. An IPv6 client is counted by its /64 (one
subscriber's network: a host picks any address in it at no cost), an IPv4-mapped IPv6 address as
the IPv4 address it carries, an IPv4 address by itself (:func:`address_bucket`).

Wrapping an endpoint is one line, each wrapped endpoint with its own budget::

    Route("/token", by_address(token_endpoint), methods=["POST"])
    Mount("/register", app=AddressLimited(register_app))

Memory is bounded: an address whose budget is whole again is forgotten, and past
``max_addresses`` the longest idle ones are dropped first.
"""

from __future__ import annotations

import ipaddress
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from toolcrib.policy.rate_limits import MINUTE, next_tat, passes, retry_after

__all__ = [
    "AddressLimited",
    "AddressLimiter",
    "address_bucket",
    "by_address",
    "client_address",
    "rate_limited_json",
    "too_many",
]

Endpoint = Callable[[Request], Awaitable[Response]]
Refuse = Callable[[Request, int], Response | Awaitable[Response]]

MAX_ADDRESSES = 50_000


class AddressLimiter:
    """``per_minute`` requests per address (a burst of that many, then the rate)."""

    def __init__(
        self,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.interval = MINUTE / per_minute
        self.clock = clock
        self.max_addresses = max_addresses
        self._tat: OrderedDict[str, float] = OrderedDict()  # least recently seen first

    def check(self, address: str | None) -> float | None:
        """Count one request from ``address`` (its :func:`address_bucket`): None when it may pass,
        else seconds to wait."""
        return self._take(address_bucket(address) if address else "unknown")

    def _take(self, key: str) -> float | None:
        now = self.clock()
        self._forget_rested(now)
        new = next_tat(self._tat.get(key), now, self.interval)
        if not passes(new, now, MINUTE):
            return retry_after(new, now, MINUTE)
        self._tat[key] = new
        self._tat.move_to_end(key)
        while len(self._tat) > self.max_addresses:
            self._tat.popitem(last=False)
        return None

    def retry_after(self, bucket: str, address: str) -> int | None:
        """:meth:`check` for one of several endpoints sharing this limiter, each with its own
        budget per address (``bucket``): None when the request may pass, else whole seconds."""
        wait = self._take(f"{bucket}\0{address_bucket(address)}")
        return None if wait is None else _seconds(wait)

    def __len__(self) -> int:
        return len(self._tat)

    def _forget_rested(self, now: float) -> None:
        """Drop idle addresses whose budget is whole again, oldest first (a few per request)."""
        for _ in range(8):
            oldest = next(iter(self._tat.items()), None)
            if oldest is None or oldest[1] > now:
                return
            del self._tat[oldest[0]]


def address_bucket(address: str) -> str:
    """What one client address counts as: an IPv6 address its /64, an IPv4-mapped one the IPv4
    address it carries, an IPv4 address (or anything else, ``unknown`` say) itself."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_address(request: Request) -> str:
    """The address a request came from (``scope["client"]``, which the trusted-proxy middleware
    rewrites only for a proxy listed in ``trusted_proxies``)."""
    return request.client.host if request.client else "unknown"


def too_many(retry_after: int) -> Response:
    """The refusal as the OAuth endpoints answer it (RFC 6749's error object; no RFC names this
    error, so ``rate_limited``, the gateway's own code), with ``Retry-After``."""
    body = {
        "error": "rate_limited",
        "error_description": "too many requests from this address",
        "retry_after": retry_after,
    }
    return JSONResponse(body, 429, headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"})


def rate_limited_json(request: Request, wait: int) -> Response:
    """The refusal as the API faces answer it: 429, ``Retry-After``, the in-band error object."""
    message = "too many requests from this address; retry later"
    error = {"code": "rate_limited", "message": message, "retry_after": wait}
    return JSONResponse({"error": error}, 429, headers={"Retry-After": str(wait)})


def _limiter_of(request: Request) -> AddressLimiter:
    """A limiter at the gateway's ``signin_per_minute``, on the gateway's clock (tests turn it)."""
    gw = request.app.state.gateway
    return AddressLimiter(gw.settings.signin_per_minute, clock=gw.store.clock)


def _seconds(wait: float) -> int:
    return max(1, int(-(-wait // 1)))


def by_address(
    endpoint: Endpoint, refuse: Refuse = rate_limited_json, *, limiter: AddressLimiter | None = None
) -> Endpoint:
    """``endpoint`` limited per client address; a refused request gets ``refuse(request, seconds)``
    (JSON by default; the console passes its HTML page). Its budget is its own: ``limiter``, else
    one at the gateway's ``signin_per_minute`` made at its first request."""

    async def limited(request: Request) -> Response:
        nonlocal limiter
        if limiter is None:  # not ``or``: a limiter that knows no address yet has a length of 0
            limiter = _limiter_of(request)
        wait = limiter.check(client_address(request))
        if wait is None:
            return await endpoint(request)
        answer = refuse(request, _seconds(wait))
        response = answer if isinstance(answer, Response) else await answer
        response.headers["Retry-After"] = str(_seconds(wait))
        return response

    return limited


class AddressLimited:
    """ASGI middleware: ``app`` (an SDK handler, a mounted app) limited per client address."""

    def __init__(self, app: ASGIApp, limiter: AddressLimiter | None = None) -> None:
        self._app = app
        self._limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        request = Request(scope)
        if self._limiter is None:
            self._limiter = _limiter_of(request)
        wait = self._limiter.check(client_address(request))
        if wait is None:
            await self._app(scope, receive, send)
            return
        await rate_limited_json(request, _seconds(wait))(scope, receive, send)
