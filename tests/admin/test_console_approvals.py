"""The approval link in the console (#14): an approver reads the held call and approves or declines it.

A rule holds destructive calls on ``desk`` (the fixture server over HTTP). A member's call without
elicitation answers ``approval_required`` with ``approval_url``; that URL is a console page showing
who asked, the tool, its account and classification, the expiry and the call's exact arguments
(escaped), with CSRF-protected Approve and Decline forms that run the control-plane operations.
The arguments are kept sealed with the gateway's secret key and forgotten once the approval is
used or declined. One gateway for the module; each test holds its own call.
"""

from __future__ import annotations

import dataclasses
import html
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.admin.console import Console, console
from tests.conftest import Process
from tests.e2e.flow import audit_rows
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from tests.web.asgi import bearer, call_tool, in_band_error
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.governance import approvals
from toolcrib.gateway.identity import members
from toolcrib.store import approvals as approval_store
from toolcrib.store.approvals import Approval
from toolcrib.store.database import Database
from toolcrib.web.admin.approvals import ARGUMENTS_SHOWN_BYTES

pytestmark = pytest.mark.anyio

DELETE = "desk__delete_ticket"
HOSTILE = '<script>alert("x")</script>'
ALL = "mcp:tools mcp:read mcp:write mcp:destructive"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Org:
    c: Console
    db_file: Path
    owner: str
    admin: str
    mia: str

    async def hold(self, ticket: str) -> dict[str, Any]:
        """Mia's call of ``desk__delete_ticket``, held: its ``approval_required`` error."""
        http = await self.c.browser()
        result = await call_tool(
            http, self.mia, "execute_tool", {"tool": DELETE, "arguments": {"ticket_id": ticket}}
        )
        error = in_band_error(result)
        assert error["code"] == "approval_required", error
        return error

    async def run(self, ticket: str) -> dict[str, Any]:
        http = await self.c.browser()
        return await call_tool(
            http, self.mia, "execute_tool", {"tool": DELETE, "arguments": {"ticket_id": ticket}}
        )

    def sealed(self, approval_id: str) -> str | None:
        """The ``arguments`` column of the approval as it lies in the database file."""
        with sqlite3.connect(self.db_file) as conn:
            row = conn.execute("SELECT arguments FROM approvals WHERE id = ?", (approval_id,)).fetchone()
        assert row is not None
        value: str | None = row[0]
        return value


@pytest.fixture(scope="module")
async def org(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Org]:
    folder = tmp_path_factory.mktemp("approvals")
    settings = settings_for(folder, policy_cache_seconds=0)
    async with open_gateway(settings) as gw:
        owner = await owner_token(gw)
        row = await add_connection(gw, "desk", connector="Desk", url=fixture_http.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        await approvals.set_approval_rule(gw, "destructive", account="desk", actor=OPERATOR)
        tokens = []
        for name, role in (("ada", "admin"), ("mia", "member")):
            await members.add_member(gw.store, name, role, actor=OPERATOR)
            tokens.append((await members.create_token(gw.store, name, ALL, actor=OPERATOR))[1])
        async with console(gw) as c:
            yield Org(c, folder / "gw.store.db", owner, *tokens)


def _path(held: dict[str, Any]) -> str:
    url = urlsplit(str(held["approval_url"]))
    assert url.path == f"/admin/approvals/{held['approval_id']}"
    return url.path


async def test_14_an_admin_opens_the_approval_link_sees_the_exact_call_approves_it_and_it_runs_once(
    org: Org,
) -> None:
    ticket = f"TCK-1001 {HOSTILE}"
    held = await org.hold(ticket)
    admin, csrf = await org.c.signed_in(org.admin)
    listed = (await admin.get("/admin/approvals")).text
    assert f'href="/admin/approvals/{held["approval_id"]}"' in listed
    page = await admin.get(_path(held))
    assert page.status_code == 200
    shown = page.text.split('<pre class="json" id="arguments">', 1)[1].split("</pre>", 1)[0]
    assert "TCK-1001 &lt;script&gt;alert(" in shown
    assert HOSTILE not in page.text
    for field, value in (("asked-by", "mia"), ("account", "desk"), ("classification", "destructive")):
        assert f'id="{field}">{value}<' in page.text, field
    assert f'<code id="tool">{DELETE}</code>' in page.text
    approved = await admin.post(f"{_path(held)}/approve", data={"csrf": csrf})
    assert (approved.status_code, approved.headers["location"]) == (
        303,
        f"{_path(held)}?done=approval_approved",
    )
    after = (await admin.get(approved.headers["location"])).text
    assert 'id="approval-status">approved<' in after
    assert 'id="approved-by">ada<' in after
    ran = await org.run(ticket)
    again = in_band_error(await org.run(ticket))
    rows = [r for r in await audit_rows(org.c.gw, DELETE) if r.target_id == ticket]
    assert not ran.get("isError"), ran
    assert again["code"] == "approval_required"
    assert again["approval_id"] != held["approval_id"]
    assert [(r.outcome, r.approved_by) for r in reversed(rows)] == [
        ("error", None),
        ("ok", "ada"),
        ("error", None),
    ]
    spent = (await admin.get(_path(held))).text
    assert 'id="arguments-gone"' in spent
    assert "TCK-1001" not in spent
    assert 'action="' + _path(held) + '/approve"' not in spent


async def test_14_the_held_arguments_are_sealed_at_rest_and_forgotten_once_the_approval_is_used(
    org: Org,
) -> None:
    ticket = "TCK-SEALED-4417"
    held = await org.hold(ticket)
    sealed = org.sealed(held["approval_id"])
    assert sealed is not None
    assert ticket not in sealed
    assert org.c.gw.store.box.open(sealed) == {"ticket_id": ticket}
    await approvals.approve(org.c.gw.store, held["approval_id"], actor=OPERATOR)
    assert org.sealed(held["approval_id"]) is not None  # approved, not used yet: still readable
    assert not (await org.run(ticket)).get("isError")
    assert org.sealed(held["approval_id"]) is None


async def test_14_the_rest_approval_link_data_carries_the_arguments_for_who_may_approve(org: Org) -> None:
    held = await org.hold("TCK-REST-2")
    http = await org.c.browser()
    shown = await http.get(f"/api/approvals/{held['approval_id']}", headers=bearer(org.admin))
    refused = await http.get(f"/api/approvals/{held['approval_id']}", headers=bearer(org.mia))
    assert shown.status_code == 200
    assert shown.json()["arguments"] == {"ticket_id": "TCK-REST-2"}
    assert (shown.json()["account"], shown.json()["classification"]) == ("desk", "destructive")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_required"
    assert "TCK-REST-2" not in refused.text


async def test_r7_1_a_member_opening_an_approval_link_gets_the_denied_page_and_cannot_approve(
    org: Org,
) -> None:
    held = await org.hold("TCK-MEMBER-3")
    mia, csrf = await org.c.signed_in(org.mia)
    admin, _ = await org.c.signed_in(org.admin)
    assert 'href="/admin/approvals"' in (await admin.get("/admin/connections")).text
    assert 'href="/admin/approvals"' not in (await mia.get("/admin/connections")).text
    for path in ("/admin/approvals", _path(held)):
        denied = await mia.get(path)
        assert denied.status_code == 403
        assert "<code>permission_required</code>" in denied.text
        assert "TCK-MEMBER-3" not in denied.text
    for verb in ("approve", "decline"):
        posted = await mia.post(f"{_path(held)}/{verb}", data={"csrf": csrf})
        assert posted.status_code == 403
        assert "<code>permission_required</code>" in posted.text
    approval = await approvals.get_approval(org.c.gw.store, held["approval_id"], actor=OPERATOR)
    assert approval.status == "pending"


async def test_14_an_approve_post_without_the_sessions_csrf_token_approves_nothing(org: Org) -> None:
    held = await org.hold("TCK-CSRF-4")
    admin, csrf = await org.c.signed_in(org.admin)
    _, other = await org.c.signed_in(org.admin)
    for data, headers in (
        ({}, {}),
        ({"csrf": "forged"}, {}),
        ({"csrf": other}, {}),
        ({"csrf": csrf}, {"Origin": "https://evil.example"}),
    ):
        answer = await admin.post(f"{_path(held)}/approve", data=data, headers=headers)
        assert answer.status_code == 403
        assert "<code>csrf_failed</code>" in answer.text
    approval = await approvals.get_approval(org.c.gw.store, held["approval_id"], actor=OPERATOR)
    assert (approval.status, approval.approved_by) == ("pending", None)


async def test_14_a_declined_approval_never_runs_and_forgets_its_arguments(org: Org) -> None:
    ticket = "TCK-DECLINE-5"
    held = await org.hold(ticket)
    admin, csrf = await org.c.signed_in(org.admin)
    declined = await admin.post(f"{_path(held)}/decline", data={"csrf": csrf})
    assert declined.status_code == 303
    assert 'id="approval-status">declined<' in (await admin.get(declined.headers["location"])).text
    assert org.sealed(held["approval_id"]) is None
    late = await admin.post(f"{_path(held)}/approve", data={"csrf": csrf})
    assert late.status_code == 400
    assert "<code>invalid_arguments</code>" in late.text
    again = in_band_error(await org.run(ticket))
    rows = [r for r in await audit_rows(org.c.gw, DELETE) if r.target_id == ticket]
    assert again["code"] == "approval_required"
    assert [r.outcome for r in rows] == ["error", "error"]


async def test_14_long_arguments_are_cut_on_the_approval_page(org: Org) -> None:
    held = await org.hold("x" * (3 * ARGUMENTS_SHOWN_BYTES))
    admin, _ = await org.c.signed_in(org.admin)
    page = (await admin.get(_path(held))).text
    shown = page.split('<pre class="json" id="arguments">', 1)[1].split("</pre>", 1)[0]
    assert 'id="arguments-cut"' in page
    assert len(html.unescape(shown).encode()) <= ARGUMENTS_SHOWN_BYTES
    assert len(page.encode()) < 2 * ARGUMENTS_SHOWN_BYTES


async def test_14_an_expired_approval_shows_no_arguments_and_no_buttons(org: Org) -> None:
    gw = org.c.gw
    now = gw.store.clock()
    lapsed = Approval("apr_lapsed", "mia", DELETE, "ab", "pending", None, now - 700, now - 100)
    await approval_store.insert_approval(
        gw.store.db, dataclasses.replace(lapsed, arguments=gw.store.box.seal({"ticket_id": "TCK-LAPSED"}))
    )
    admin, _ = await org.c.signed_in(org.admin)
    page = (await admin.get("/admin/approvals/apr_lapsed")).text
    listed = (await admin.get("/admin/approvals")).text
    assert 'id="arguments-gone"' in page
    assert "TCK-LAPSED" not in page
    assert 'action="/admin/approvals/apr_lapsed/approve"' not in page
    assert "apr_lapsed" not in listed


async def test_14_housekeeping_deletes_an_expired_approval_with_its_arguments(org: Org) -> None:
    held = await org.hold("TCK-EXPIRE-6")
    await approval_store.purge(org.c.gw.store.db, held["expires_at"] + 1)
    with sqlite3.connect(org.db_file) as conn:
        left = conn.execute("SELECT count(*) FROM approvals WHERE id = ?", (held["approval_id"],)).fetchone()
    admin, _ = await org.c.signed_in(org.admin)
    gone = await admin.get(_path(held))
    assert left == (0,)
    assert gone.status_code == 404
    assert "<code>not_found</code>" in gone.text


async def test_r15_1_migration_0008_keeps_approvals_made_before_it_with_no_arguments(tmp_path: Path) -> None:
    old = Database(f"sqlite:///{tmp_path / 'old.db'}")
    await old.migrate("0007")
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO approvals (id, member, operation, arguments_sha256, status, created_at, expires_at)"
            " VALUES ('apr_old', 'mia', 'desk__delete_ticket', 'ab', 'pending', 1.0, 9e9)"
        )
    await old.migrate()
    kept = await approval_store.get_approval(old, "apr_old")
    await old.close()
    assert kept is not None
    assert (kept.status, kept.arguments) == ("pending", None)
