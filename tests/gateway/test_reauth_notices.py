"""Search names the OAuth connections waiting for an authorization, within its budget (#14, R-5.9),
with a link for who started that authorization alone (R-13.6).

The flows themselves are the end-to-end tests' (``tests/e2e/test_oauth_binding.py``); here the
authorizer is asked for a start link token that the test chooses, to reach the budget's edges.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.e2e.inprocess import open_gateway, settings_for

from toolcrib.gateway.connections.oauth_binding import START_PATH
from toolcrib.gateway.connections.upstream_oauth import reauth_notices
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity.members import init_owner, operator_principal
from toolcrib.store.connections import ConnectionRow

pytestmark = pytest.mark.anyio


def _waiting(name: str) -> ConnectionRow:
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
    )


def _links_for(monkeypatch: pytest.MonkeyPatch, gw: Gateway, starter: str, token: str) -> None:
    """The authorizer holds a live flow started by ``starter`` on every connection."""

    def pending_link(account: str, member: str, who: str) -> str | None:
        return token if who == starter and member == "" else None

    monkeypatch.setattr(gw.upstreams.authorizer, "pending_link", pending_link)


async def test_r5_9_reauth_notices_keep_to_their_share_of_the_search_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await init_owner(gw.store, "owner")
        principal = await operator_principal(gw.store)
        _links_for(monkeypatch, gw, principal.member, "s" * 1000)
        long_link = gw.settings.resource_url + START_PATH + "s" * 1000
        for name in ("alpha", "beta", "gamma", "delta"):
            gw.catalog.connections[name] = _waiting(name)
        gw.catalog.connections["ok"] = replace(_waiting("ok"), status="active")
        policy = await gw.policy.current()
        notices = reauth_notices(gw, principal, policy)
        names = [n["account"] for n in notices]
        assert names == ["alpha", "beta", "delta"]  # at most three, by name; the active one left out
        assert notices[0]["authorize_url"] == long_link
        assert notices[1]["authorize_url"] is None  # no room for a second long link: the account only
        assert len(json.dumps(notices).encode()) <= 1500


async def test_r13_6_only_who_started_the_authorization_is_given_its_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following the link binds the organization's connection to the follower's upstream account:
    everyone is told the account waits; only the admin who started its authorization gets the
    link, another admin and the owner included get none."""
    async with open_gateway(settings_for(tmp_path, semantic=False)) as gw:
        await init_owner(gw.store, "owner")
        owner = await operator_principal(gw.store)
        member, admin = (
            replace(owner, member="mia", role="member"),
            replace(owner, member="ada", role="admin"),
        )
        _links_for(monkeypatch, gw, "ada", "t" * 43)
        gw.catalog.connections["tracker"] = _waiting("tracker")
        policy = await gw.policy.current()
        seen = {p.member: reauth_notices(gw, p, policy) for p in (member, admin, owner)}
        assert {name: [n["account"] for n in notices] for name, notices in seen.items()} == {
            "mia": ["tracker"],
            "ada": ["tracker"],
            "owner": ["tracker"],
        }
        assert seen["ada"][0]["authorize_url"] == gw.settings.resource_url + START_PATH + "t" * 43
        assert seen["mia"][0]["authorize_url"] is None
        assert seen["owner"][0]["authorize_url"] is None
