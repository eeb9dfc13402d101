"""The console and rate limits (R-7.10, #21): its sign-in is limited per client address, and its
Limits page lists, adds and removes limits through the control-plane operations."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest

from tests.admin.console import BASE, Console, console, hidden
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from toolcrib.gateway.governance import rate_limits
from toolcrib.gateway.identity import members
from toolcrib.web.address_limits import AddressLimiter

pytestmark = pytest.mark.anyio

PER_MINUTE = 5


@asynccontextmanager
async def _console(tmp_path: Path, now: list[float]) -> AsyncIterator[tuple[Console, str]]:
    settings = settings_for(tmp_path, signin_per_minute=PER_MINUTE, policy_cache_seconds=0, semantic=False)
    async with open_gateway(settings, lambda: now[0]) as gw, console(gw) as c:
        yield c, await owner_token(gw)


def _from(c: Console, address: str) -> httpx2.AsyncClient:
    transport = httpx2.ASGITransport(app=c.app, client=(address, 40000))
    return httpx2.AsyncClient(transport=transport, base_url=BASE, timeout=60, follow_redirects=False)


async def _try(http: httpx2.AsyncClient, token: str) -> httpx2.Response:
    form = await http.get("/admin/login")
    return await http.post("/admin/login", data={"token": token, "nonce": hidden(form.text, "nonce")})


async def test_r7_10_the_console_sign_in_answers_429_past_the_limit_of_one_address(tmp_path: Path) -> None:
    now = [1_760_000_000.0]
    async with _console(tmp_path, now) as (c, owner), _from(c, "203.0.113.7") as guesser:
        tries = [(await _try(guesser, f"tc_guess_{i}")).status_code for i in range(PER_MINUTE + 1)]
        assert tries == [401] * PER_MINUTE + [429]
        refused = await _try(guesser, owner)  # even the right token: the address waits
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "12"  # 60 s / 5
        assert "rate_limited" in refused.text
        assert "session" not in refused.cookies
        async with _from(c, "198.51.100.9") as other:  # another address has its own budget
            assert (await _try(other, owner)).status_code == 303
        now[0] += 12
        assert (await _try(guesser, owner)).status_code == 303


def test_r7_10_the_address_limiter_forgets_idle_addresses_and_stays_bounded() -> None:
    now = [0.0]
    limiter = AddressLimiter(2, clock=lambda: now[0], max_addresses=100)
    for n in range(1_000):  # a flood from many addresses: memory stays bounded
        assert limiter.check(f"10.0.{n // 256}.{n % 256}") is None
    assert len(limiter) == 100
    assert limiter.check("10.0.3.231") is None  # a kept address: its second request passes
    assert limiter.check("10.0.3.231") == pytest.approx(30.0)  # its third waits 30 s
    now[0] += 3_600  # an hour idle: rested addresses are forgotten as requests come
    for _ in range(20):
        limiter.check("192.0.2.1")
    assert len(limiter) < 100


async def test_r7_10_the_limits_page_lists_adds_and_removes_limits(tmp_path: Path) -> None:
    now = [1_760_000_000.0]
    async with _console(tmp_path, now) as (c, owner):
        await members.add_member(c.gw.store, "mia", "member", actor=OPERATOR)
        http, csrf = await c.signed_in(owner)
        page = await http.get("/admin/limits")
        assert page.status_code == 200
        assert "No limits" in page.text
        form = {"csrf": csrf, "target_kind": "member", "member": "mia", "role": "", "per_minute": "7"}
        added = await http.post("/admin/limits/create", data=form)
        assert added.status_code == 303
        page = await http.get(added.headers["location"])
        assert "7/min for member mia" in html.unescape(page.text)
        bad = await http.post("/admin/limits/create", data={**form, "per_minute": "-3"})
        assert bad.status_code == 400
        assert "invalid_arguments" in bad.text
        operator = await members.operator_principal(c.gw.store)
        [rule] = await rate_limits.list_limits(c.gw.policy, operator)
        assert (rule.member, rule.role, rule.per_minute, rule.per_day) == ("mia", None, 7, None)
        gone = await http.post("/admin/limits/delete", data={"csrf": csrf, "id": rule.id})
        assert gone.status_code == 303
        assert await rate_limits.list_limits(c.gw.policy, operator) == []
