"""A member's grants on every face (R-7.9): listed and revoked by their member and by admins.

MCP (``toolcrib__grants__list`` / ``__revoke``), the command line (``toolcrib grants``), the
console ("My grants", and the Members page) and the ``/auth/grants`` page all call the same
gateway functions; an OAuth grant shows its client and when it was last used.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.conftest import Process, cli, cli_json
from tests.e2e.mcpclient import error_code
from tests.e2e.oauth_person import REDIRECT, Person, authorize_url, pkce, query_of, register
from tests.e2e.org import PREFIX, organization, rpc
from toolcrib.store import members as member_store

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def oauth_grant(base: str, pat: str) -> dict[str, str]:
    """A client named "Faces App" granted by the holder of ``pat``: its token answer."""
    async with httpx2.AsyncClient(timeout=30) as http:
        client = await register(http, base, client_name="Faces App")
        verifier, challenge = pkce()
        async with Person(base, pat) as person:
            back = await person.authorize(authorize_url(base, client["client_id"], challenge))
        form = {"grant_type": "authorization_code", "code": query_of(back.headers["location"])["code"]}
        form.update(code_verifier=verifier, client_id=client["client_id"], redirect_uri=REDIRECT)
        answer: dict[str, str] = (await http.post(base + "/token", data=form)).json()
        return answer


async def test_r7_9_a_member_lists_and_revokes_their_own_grants_over_mcp_but_no_one_elses(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http, semantic=False) as org:
        mine = await org.token("mona")
        other = await org.token("otto")
        issued = await oauth_grant(org.base, mine)
        assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 200
        listed = await org.control(mine, "grants__list")
        assert {g["member"] for g in listed} == {"mona"}
        oauth = next(g for g in listed if g["kind"] == "oauth")
        assert oauth["client_name"] == "Faces App"
        assert oauth["last_used_at"] is not None  # the call above
        refused = await org.call(mine, PREFIX + "grants__list", {"member": "otto"})
        assert error_code(refused) == "permission_required"
        otto_grant = (await org.control(other, "grants__list"))[0]["id"]
        refused = await org.call(mine, PREFIX + "grants__revoke", {"id": otto_grant})
        assert error_code(refused) == "permission_required"
        await org.control(mine, "grants__revoke", {"id": oauth["id"]})
        assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 401
        everyone = await org.control(org.owner, "grants__list")
        assert {"mona", "otto", "owner"} <= {g["member"] for g in everyone}


async def test_r7_9_last_use_is_written_at_most_once_a_minute_not_per_call(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http, semantic=False) as org:
        issued = await oauth_grant(org.base, await org.token("lulu"))
        assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 200
        grant = next(g for g in await member_store.list_grants(org.gw.store.db, "lulu") if g.kind == "oauth")
        first = await _last_used(org.gw.store.db, grant.id)
        for _ in range(3):
            assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 200
        assert await _last_used(org.gw.store.db, grant.id) == first


async def _last_used(db: object, grant_id: str) -> float | None:
    from sqlalchemy import select

    from toolcrib.store.tables import grants

    async with db.read() as conn:  # type: ignore[attr-defined]
        value = (
            await conn.execute(select(grants.c.last_used_at).where(grants.c.id == grant_id))
        ).scalar_one()
    return float(value) if value is not None else None


async def test_r7_9_the_command_line_lists_and_revokes_grants(tmp_path: Path, fixture_http: Process) -> None:
    async with organization(tmp_path, fixture_http, semantic=False) as org:
        issued = await oauth_grant(org.base, await org.token("carl"))
        listed = await anyio.to_thread.run_sync(
            lambda: cli_json(org.db_url, "grants", "list", "--member", "carl")
        )
        assert isinstance(listed, list)
        oauth = next(g for g in listed if g["kind"] == "oauth")
        assert oauth["client_name"] == "Faces App"
        await anyio.to_thread.run_sync(lambda: cli(org.db_url, "grants", "revoke", oauth["id"]))
        assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 401
        missing = await anyio.to_thread.run_sync(
            lambda: cli(org.db_url, "grants", "revoke", "grt_nothere", check=False)
        )
        assert missing.returncode == 1


async def test_r7_9_my_grants_pages_show_and_revoke_ones_own_grants(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http, semantic=False) as org:
        pat = await org.token("gina")
        issued = await oauth_grant(org.base, pat)
        async with Person(org.base, pat) as person:
            await person.sign_in(org.base + "/auth/login?next=/auth/grants")
            page = await person.http.get(org.base + "/auth/grants")
            assert page.status_code == 200
            assert "Faces App" in page.text
            row = re.search(
                r'<tr class="grant" data-id="([^"]+)">\s*<td><code>[^<]+</code></td>\s*<td>oauth', page.text
            )
            assert row is not None
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert csrf is not None
            done = await person.http.post(
                org.base + "/auth/grants/revoke", data={"csrf": csrf.group(1), "id": row.group(1)}
            )
            assert done.status_code == 303
            forged = await person.http.post(
                org.base + "/auth/grants/revoke", data={"csrf": "x", "id": row.group(1)}
            )
            assert forged.status_code == 403
        assert (await rpc(org.base, issued["access_token"], "tools/list", {})).status_code == 401
        async with httpx2.AsyncClient(base_url=org.base, timeout=30) as console:
            login = await console.get("/admin/login")
            nonce = re.search(r'name="nonce" value="([^"]+)"', login.text)
            assert nonce is not None
            await console.post("/admin/login", data={"token": pat, "nonce": nonce.group(1)})
            mine = await console.get("/admin/grants")
            assert mine.status_code == 200
            assert "Faces App" in mine.text
            assert "My grants" in mine.text
