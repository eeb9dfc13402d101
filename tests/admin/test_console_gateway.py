"""The gateway functions the console added (#13): reactivation, searching as a member, the chart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.admin.console import console
from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from toolcrib.errors import ConfigError, PermissionRequired
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.discovery.playground import answer_bytes, search_as
from toolcrib.gateway.identity import members
from toolcrib.gateway.identity.members import operator_principal
from toolcrib.store import members as member_store
from toolcrib.web.admin.insight import chart
from toolcrib.web.telemetry import SavingsHistory

pytestmark = pytest.mark.anyio


async def test_r7_1_only_an_owner_reactivates_a_suspended_owner(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        await owner_token(gw)
        await members.add_member(gw.store, "olga", "owner", actor=OPERATOR)
        await members.add_member(gw.store, "adam", "admin", actor=OPERATOR)
        await members.suspend_member(gw.store, "olga", actor=OPERATOR)
        admin = await operator_principal(gw.store, "adam")
        with pytest.raises(PermissionRequired) as refused:
            await members.reactivate_member(gw.store, "olga", admin)
        assert refused.value.code == "permission_required"
        await members.reactivate_member(gw.store, "olga", await operator_principal(gw.store))
        olga = await member_store.get_member(gw.store.db, "olga")
        assert olga is not None
        assert olga.status == "active"
        with pytest.raises(ConfigError):  # an active member is not reactivated
            await members.reactivate_member(gw.store, "olga", actor=OPERATOR)


async def test_r5_1_searching_as_a_member_uses_their_grants_scopes(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with open_gateway(settings_for(tmp_path, policy_cache_seconds=0)) as gw:
        await owner_token(gw)
        assert (
            await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        ).status == "active"
        await members.add_member(gw.store, "rita", "member", actor=OPERATOR)
        await members.create_token(
            gw.store, "rita", "mcp:tools mcp:read", actor=OPERATOR
        )  # no mcp:write: write tools stay hidden
        owner = await operator_principal(gw.store)
        as_rita = await search_as(gw, owner, "rita", "add two numbers", 5)
        as_owner = await search_as(gw, owner, owner.member, "add two numbers", 5)
        assert as_rita["scopes"] == ["mcp:read", "mcp:tools"]
        assert "desk__add_numbers" not in [c["name"] for c in as_rita["answer"]["results"]]
        assert "desk__add_numbers" in [c["name"] for c in as_owner["answer"]["results"]]
        assert as_owner["bytes"] == answer_bytes(as_owner["answer"])


async def test_r7_1_a_member_cannot_search_as_someone_else(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        await owner_token(gw)
        await members.add_member(gw.store, "max", "member", actor=OPERATOR)
        with pytest.raises(PermissionRequired):
            await search_as(gw, await operator_principal(gw.store, "max"), "owner", "anything")


def test_r14_1_the_savings_history_is_bounded_whatever_the_traffic() -> None:
    history = SavingsHistory(step=60, size=10)
    for minute in range(1_000):
        history.add(surface=100, flat=1_000, now=minute * 60.0)
        history.add(surface=50, flat=0, now=minute * 60.0 + 30)  # within the step: moves the last point
    points = history.points()
    assert len(points) == 10
    assert points[-1] == (999 * 60.0, 150_000, 1_000_000)
    drawn = chart(points)
    assert drawn is not None
    assert drawn["saved"] == pytest.approx(0.85)
    assert chart([]) is None


async def test_13_behind_a_tls_proxy_the_consoles_cookies_are_secure(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, public_url="https://tools.example")
    async with open_gateway(settings) as gw, console(gw) as c:
        http = await c.browser("http://toolcrib.test")  # the proxy speaks plain HTTP to the gateway
        form = await http.get("/admin/login")
        cookie = form.headers["set-cookie"]
        assert "toolcrib_admin_login=" in cookie
        assert "secure" in {a.strip().lower() for a in cookie.split(";")}
