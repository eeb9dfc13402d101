"""A grant made from another ends with it; an access token works only where it was issued for
(R-7.11, R-7.9, R-7.6; #32 findings 1 and 6).

The attack of finding 1: an admin's short-lived personal token signs in at ``/auth/login``,
consents for an OAuth client, and the OAuth grant outlived the token (revoked or expired), its
refresh token rotating forever. The attack of finding 6: an access token issued for ``/mcp`` was
accepted by the admin API and the console's sign-in. A real gateway served over HTTP (and a
second one on the same database, as another replica), the browser step through its real pages,
the client's requests at the real ``/token``; each test runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import select

from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.oauth_person import REDIRECT, Person, authorize_url, hidden, pkce, query_of, register
from tests.e2e.org import rpc
from tests.principals import OPERATOR
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import grants as grant_faces
from toolcrib.gateway.identity import members
from toolcrib.store.tables import grants, oauth_tokens

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

ALL = "mcp:tools mcp:read mcp:write mcp:destructive"


@dataclass
class World:
    gw: Gateway
    base: str
    http: httpx2.AsyncClient
    now: list[float]

    async def admin(self, name: str, hours: float | None = None) -> tuple[str, str]:
        """An admin and their personal token (its grant id, the token)."""
        await members.add_member(self.gw.store, name, "admin", actor=OPERATOR)
        days = hours / 24 if hours is not None else None
        row, token = await members.create_token(self.gw.store, name, ALL, days, actor=OPERATOR)
        return row.id, token

    async def code(self, person: Person, client_id: str, **params: str) -> tuple[str, str]:
        """The browser step: a code for ``client_id`` and the PKCE verifier it needs."""
        verifier, challenge = pkce()
        back = await person.authorize(authorize_url(self.base, client_id, challenge, **params))
        assert back.status_code == 302, back.text
        return query_of(back.headers["location"])["code"], verifier

    async def token(self, **form: str) -> httpx2.Response:
        return await self.http.post(self.base + "/token", data=form)

    async def exchange(self, client_id: str, code: str, verifier: str, **extra: str) -> httpx2.Response:
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
        return await self.token(**form, client_id=client_id, redirect_uri=REDIRECT, **extra)

    async def refresh(self, client_id: str, refresh_token: str, **extra: str) -> httpx2.Response:
        return await self.token(
            grant_type="refresh_token", refresh_token=refresh_token, client_id=client_id, **extra
        )

    async def consented(self, pat: str, **params: str) -> tuple[str, dict[str, Any]]:
        """A client registered, the person consented with ``pat``, the code exchanged."""
        client = await register(self.http, self.base)
        async with Person(self.base, pat) as person:
            code, verifier = await self.code(person, client["client_id"], **params)
        issued = await self.exchange(client["client_id"], code, verifier)
        assert issued.status_code == 200, issued.text
        return client["client_id"], issued.json()

    async def rows(self, member: str) -> dict[str, Any]:
        """The member's grants by kind (one of each in these tests)."""
        async with self.gw.store.db.read() as conn:
            found = (await conn.execute(select(grants).where(grants.c.member == member))).all()
        return {r.kind: r for r in found}

    async def api(self, token: str) -> int:
        """The status of one admin-API call with ``token``."""
        answer = await self.http.post(
            self.base + "/api/grants/list", json={}, headers={"Authorization": f"Bearer {token}"}
        )
        return answer.status_code

    async def console_sign_in(self, token: str) -> int:
        async with httpx2.AsyncClient(timeout=30) as browser:
            form = await browser.get(self.base + "/admin/login")
            nonce = hidden(form.text, "nonce")
            answer = await browser.post(self.base + "/admin/login", data={"token": token, "nonce": nonce})
        return answer.status_code


@asynccontextmanager
async def world(tmp_path: Path) -> AsyncIterator[World]:
    now = [time.time()]  # the SDK checks a code's expiry against the real clock: start there
    settings = settings_for(tmp_path, semantic=False, signin_per_minute=10_000)
    async with (
        open_gateway(settings, clock=lambda: now[0]) as gw,
        serve(gw) as base,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        await owner_token(gw)
        yield World(gw, base, http, now)


async def test_r7_11_revoking_the_personal_token_ends_the_oauth_grant_made_through_its_sign_in(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        pat_id, pat = await w.admin("ada", hours=1)
        client_id, issued = await w.consented(pat)
        assert (await rpc(w.base, issued["access_token"], "tools/list", {})).status_code == 200
        # revoked through another replica on the same database: seen by this one on the next call
        async with open_gateway(w.gw.settings) as other:
            await grant_faces.revoke_grant(other.store, OPERATOR, pat_id)
        assert (await rpc(w.base, issued["access_token"], "tools/list", {})).status_code == 401
        refused = await w.refresh(client_id, issued["refresh_token"])
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_grant"
        rows = await w.rows("ada")
        assert all(r.revoked_at is not None for r in rows.values())
        assert rows["session"].parent == pat_id  # the chain, as recorded
        assert rows["oauth"].parent == rows["session"].id
        assert rows["oauth"].expires_at <= rows["pat"].expires_at


async def test_r7_11_an_expiring_personal_token_ends_the_oauth_grant_and_no_refresh_outlives_it(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        _, pat = await w.admin("ada", hours=1)
        pat_ends = (await w.rows("ada"))["pat"].expires_at
        client_id, issued = await w.consented(pat)
        w.now[0] += 1800
        renewed = await w.refresh(client_id, issued["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        fresh = renewed.json()
        assert fresh["expires_in"] <= 1800  # the access token ends with the personal token
        async with w.gw.store.db.read() as conn:
            ends = (await conn.execute(select(oauth_tokens.c.expires_at))).scalars().all()
        assert ends
        assert max(ends) <= pat_ends  # the refresh token too
        assert (await rpc(w.base, fresh["access_token"], "tools/list", {})).status_code == 200
        w.now[0] += 1801  # the personal token has expired
        assert (await rpc(w.base, pat, "tools/list", {})).status_code == 401
        assert (await rpc(w.base, fresh["access_token"], "tools/list", {})).status_code == 401
        refused = await w.refresh(client_id, fresh["refresh_token"])
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_grant"


async def test_r7_11_revoking_the_sign_in_session_revokes_the_oauth_grant_made_at_its_consent(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        _, pat = await w.admin("ada")
        client_id, issued = await w.consented(pat)
        session_id = (await w.rows("ada"))["session"].id
        me = await w.gw.bearers.authenticate(pat)
        await grant_faces.revoke_grant(w.gw.store, me, session_id)
        assert (await rpc(w.base, issued["access_token"], "tools/list", {})).status_code == 401
        refused = await w.refresh(client_id, issued["refresh_token"])
        assert refused.json()["error"] == "invalid_grant"
        assert (await w.rows("ada"))["oauth"].revoked_at is not None
        # what the session was made from is not made from it: the personal token still works
        assert (await rpc(w.base, pat, "tools/list", {})).status_code == 200


async def test_r7_11_a_grant_made_at_a_sign_in_session_ends_with_what_signed_in_not_with_the_session(
    tmp_path: Path,
) -> None:
    """The session is the consent page's eight-hour handle: a client's grant made through it
    lives as long as the personal token the person proved, and no longer."""
    async with world(tmp_path) as w:
        _, pat = await w.admin("ada", hours=48)
        pat_ends = (await w.rows("ada"))["pat"].expires_at
        client_id, issued = await w.consented(pat)
        rows = await w.rows("ada")
        assert rows["session"].expires_at < pat_ends  # the session itself: eight hours
        assert rows["oauth"].expires_at == pat_ends  # the grant: the personal token's end
        w.now[0] += 9 * 3600  # the session has ended; the personal token has not
        renewed = await w.refresh(client_id, issued["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        assert (await rpc(w.base, renewed.json()["access_token"], "tools/list", {})).status_code == 200
        w.now[0] += 40 * 3600  # the personal token has ended: so has the grant
        refused = await w.refresh(client_id, renewed.json()["refresh_token"])
        assert refused.json()["error"] == "invalid_grant"


async def test_r7_11_a_code_whose_sign_in_ended_before_the_exchange_makes_no_grant(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        pat_id, pat = await w.admin("ada")
        client = await register(w.http, w.base)
        async with Person(w.base, pat) as person:
            code, verifier = await w.code(person, client["client_id"])
        await members.revoke_token(w.gw.store, pat_id, OPERATOR)
        refused = await w.exchange(client["client_id"], code, verifier)
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_grant"
        assert "oauth" not in await w.rows("ada")


async def test_r7_11_a_personal_token_created_through_an_admins_token_ends_with_it(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        pat_id, pat = await w.admin("ada")
        await members.add_member(w.gw.store, "bob", "member", actor=OPERATOR)
        made, bobs = await members.create_token(
            w.gw.store, "bob", ALL, actor=await w.gw.bearers.authenticate(pat)
        )
        assert (await rpc(w.base, bobs, "tools/list", {})).status_code == 200
        await members.revoke_token(w.gw.store, pat_id, OPERATOR)
        assert (await rpc(w.base, bobs, "tools/list", {})).status_code == 401
        assert made.parent == pat_id


async def test_r7_11_an_access_token_for_mcp_is_refused_by_the_admin_api_and_the_console_sign_in(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        _, pat = await w.admin("ada")
        _, issued = await w.consented(pat)
        access = issued["access_token"]
        assert (await rpc(w.base, access, "tools/list", {})).status_code == 200
        assert await w.api(access) == 401
        assert await w.console_sign_in(access) == 401
        # a personal access token keeps working on every face
        assert await w.api(pat) == 200
        assert await w.console_sign_in(pat) == 303
        listed = await grant_faces.list_grants(w.gw.store, OPERATOR, "ada")
        assert {g["kind"]: g.get("resource") for g in listed}["oauth"] == "/mcp"


async def test_r7_11_the_admin_api_is_granted_only_when_asked_for_and_ticked_by_the_person(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        _, pat = await w.admin("ada")
        client = await register(w.http, w.base)
        client_id, api = client["client_id"], w.base + "/api"
        async with Person(w.base, pat, remember=True) as person:  # asked, not ticked
            code, verifier = await w.code(person, client_id, resource=api)
            assert 'name="admin_api"' in person.last_page
            refused = await w.exchange(client_id, code, verifier, resource=api)
            assert refused.json()["error"] == "invalid_target"
        async with Person(w.base, pat, remember=True) as person:
            code, verifier = await w.code(person, client_id, resource=api)
        narrowed = (await w.exchange(client_id, code, verifier)).json()["access_token"]
        assert await w.api(narrowed) == 401
        assert (await rpc(w.base, narrowed, "tools/list", {})).status_code == 200
        async with Person(w.base, pat, admin_api=True) as person:  # a remembered consent: the page again
            code, verifier = await w.code(person, client_id, resource=api)
            assert 'name="admin_api"' in person.last_page
        issued = await w.exchange(client_id, code, verifier, resource=api)
        assert issued.status_code == 200, issued.text
        for_api = issued.json()
        assert await w.api(for_api["access_token"]) == 200
        assert (await rpc(w.base, for_api["access_token"], "tools/list", {})).status_code == 401
        assert await w.console_sign_in(for_api["access_token"]) == 401
        other = await w.refresh(client_id, for_api["refresh_token"], resource=w.base + "/mcp")
        assert other.json()["error"] == "invalid_target"
        renewed = await w.refresh(client_id, for_api["refresh_token"])
        assert await w.api(renewed.json()["access_token"]) == 200


async def test_r7_11_suspending_or_removing_a_member_forgets_their_identity_provider_token(
    tmp_path: Path,
) -> None:
    """Nothing sealed is kept for a person whose grants all ended: the provider's refresh token
    could only ever vouch for them again."""
    from toolcrib.store import idp_vouches

    async with world(tmp_path) as w:
        for name, end in (("ada", members.suspend_member), ("bob", members.remove_member)):
            await members.add_member(w.gw.store, name, "member", actor=OPERATOR)
            await idp_vouches.put_sign_in(
                w.gw.store.db,
                member=name,
                issuer="https://idp.example",
                subject=name,
                refresh_sealed="x",
                now=1.0,
            )
            await end(w.gw.store, name, OPERATOR)
            assert await idp_vouches.get_vouch(w.gw.store.db, name) is None
