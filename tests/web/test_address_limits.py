"""The per-address limiter of the sign-in endpoints (R-7.10, #21), on a real Starlette app: a
wrapped route and a wrapped mounted app answer 429 with ``Retry-After`` and the in-band error
object past their budget, per client address, each with its own budget."""

from __future__ import annotations

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from toolcrib.web.address_limits import AddressLimited, AddressLimiter, by_address

pytestmark = pytest.mark.anyio


async def _token(request: Request) -> Response:
    return PlainTextResponse("token")


async def _register(scope: object, receive: object, send: object) -> None:
    await PlainTextResponse("registered")(scope, receive, send)  # type: ignore[arg-type]


def _client(app: Starlette, address: str) -> httpx2.AsyncClient:
    transport = httpx2.ASGITransport(app=app, client=(address, 5000))
    return httpx2.AsyncClient(transport=transport, base_url="http://toolcrib.test")


async def test_r7_10_wrapped_routes_and_apps_answer_429_past_the_budget_of_an_address() -> None:
    now = [100.0]
    token = AddressLimiter(2, clock=lambda: now[0])
    register = AddressLimiter(3, clock=lambda: now[0])
    app = Starlette(
        routes=[
            Route("/token", by_address(_token, limiter=token), methods=["POST"]),
            Mount("/register", app=AddressLimited(_register, register)),
        ]
    )
    async with _client(app, "203.0.113.5") as one, _client(app, "203.0.113.6") as two:
        assert [(await one.post("/token")).status_code for _ in range(3)] == [200, 200, 429]
        refused = await one.post("/token")
        assert refused.headers["Retry-After"] == "30"
        assert refused.json()["error"] == {
            "code": "rate_limited",
            "message": refused.json()["error"]["message"],
            "retry_after": 30,
        }
        assert (await two.post("/token")).status_code == 200  # another address
        assert [(await one.post("/register/")).status_code for _ in range(4)] == [200, 200, 200, 429]
        now[0] += 30
        assert (await one.post("/token")).status_code == 200


async def test_r7_10_an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_its_ipv4() -> None:
    """#32 item 8: a host picks any address of its /64 at no cost, so each new address must not be
    a new budget; an IPv4-mapped address is the IPv4 client it carries."""
    limiter = AddressLimiter(2, clock=lambda: 100.0)
    app = Starlette(routes=[Route("/token", by_address(_token, limiter=limiter), methods=["POST"])])
    same_64 = ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe")
    async with _client(app, same_64[0]) as first, _client(app, same_64[1]) as second:
        assert [(await c.post("/token")).status_code for c in (first, second, second)] == [200, 200, 429]
    async with _client(app, "2001:db8:1:3::1") as next_64:
        assert (await next_64.post("/token")).status_code == 200  # another /64: its own budget
    async with _client(app, "198.51.100.7") as v4, _client(app, "::ffff:198.51.100.7") as mapped:
        assert [(await c.post("/token")).status_code for c in (v4, mapped, v4)] == [200, 200, 429]
    async with _client(app, "198.51.100.8") as neighbour:
        assert (await neighbour.post("/token")).status_code == 200  # IPv4: each address its own
