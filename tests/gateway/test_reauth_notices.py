"""Search names the OAuth connections waiting for an authorization, within its budget (#14, R-5.9)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.e2e.inprocess import open_gateway, settings_for

from toolcrib.gateway.members import init_owner, operator_principal
from toolcrib.gateway.oauth import may_authorize, reauth_notices
from toolcrib.store.connections import ConnectionRow

pytestmark = pytest.mark.anyio


def _waiting(name: str, url: str) -> ConnectionRow:
    return ConnectionRow(
        name=name,
        connector="Tracker",
        transport="http",
        command=None,
        url="https://tracker.example/mcp",
        secrets=None,
        status="needs_reauth",
        reason="authorize it",
        tool_count=0,
        catalog_version=1,
        auth="oauth",
        authorize_url=url,
    )


async def test_r5_9_reauth_notices_keep_to_their_share_of_the_search_budget(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await init_owner(gw, "owner")
        principal = await operator_principal(gw)
        long_link = "https://auth.example/authorize?state=" + "s" * 1000
        for name in ("alpha", "beta", "gamma", "delta"):
            gw.connections[name] = _waiting(name, long_link)
        gw.connections["ok"] = replace(_waiting("ok", long_link), status="active")
        policy = await gw.policy()
        notices = reauth_notices(gw, principal, policy)
        names = [n["account"] for n in notices]
        assert names == ["alpha", "beta", "delta"]  # at most three, by name; the active one left out
        assert notices[0]["authorize_url"] == long_link
        assert notices[1]["authorize_url"] is None  # no room for a second long link: the account only
        assert len(json.dumps(notices).encode()) <= 1500


async def test_r13_3_only_who_may_change_connections_gets_the_shared_grants_link(tmp_path: Path) -> None:
    """Following the link binds the organization's connection to the follower's upstream account:
    a member is told the account waits, an admin gets the link (search and connection views)."""
    async with open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await init_owner(gw, "owner")
        owner = await operator_principal(gw)
        member, admin = (
            replace(owner, member="mia", role="member"),
            replace(owner, member="ada", role="admin"),
        )
        link = "https://auth.example/authorize?state=abc"
        gw.connections["tracker"] = _waiting("tracker", link)
        policy = await gw.policy()
        seen = {p.role: reauth_notices(gw, p, policy) for p in (member, admin)}
        assert [n["account"] for n in seen["member"]] == ["tracker"]
        assert seen["member"][0]["authorize_url"] is None
        assert seen["admin"][0]["authorize_url"] == link
        assert may_authorize(admin)
        assert not may_authorize(member)
