"""Hardening of governance and secrets (issue #10): findings made by attacking a running gateway.

One real gateway for the module, served over real HTTP, called with the official MCP SDK client,
over REST, and through the real command line; upstreams are the fixture server over Streamable HTTP
and over stdio. SPEC R-7.1, R-7.3, R-7.5, R-3.3, R-13.1, R-13.3.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.conftest import FIXTURE_SERVER, Process, cli, cli_json
from tests.e2e.org import ALL_SCOPES, PREFIX, Org, error_of, organization
from tests.fixtures.fixture_server import JWT_SHAPED
from tests.principals import OPERATOR
from toolcrib.errors import Forbidden, InvalidArguments
from toolcrib.gateway.connections.catalogs import sync_from_store
from toolcrib.gateway.connections.manage import add_connection, remove_connection, update_connection
from toolcrib.gateway.identity import members
from toolcrib.store import connections as conn_store
from toolcrib.store import members as member_store
from toolcrib.store.connections import ConnectionRow

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET = "correct-horse-battery-staple-42"  # not credential-shaped: only the connection knows it
JWT_SIGNATURE = JWT_SHAPED.rsplit(".", 1)[1]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def org(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Org]:
    async with organization(tmp_path_factory.mktemp("hardening"), fixture_http) as served:
        yield served


async def rest(org: Org, token: str, operation: str, body: dict[str, Any]) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=org.base, timeout=60) as http:
        return await http.post(
            f"/api/{operation.replace('__', '/')}", json=body, headers={"Authorization": f"Bearer {token}"}
        )


async def cli_list(org: Org) -> Any:
    return await anyio.to_thread.run_sync(lambda: cli_json(org.db_url, "connections", "list"))


async def owner_grant_id(org: Org) -> str:
    return next(
        g.id for g in await members.list_tokens(org.gw.store, "owner", actor=OPERATOR) if g.revoked_at is None
    )


# --- finding 2: an admin becomes owner ---------------------------------------------------------


async def test_r7_1_admin_cannot_mint_an_owner_grant_on_any_face(org: Org) -> None:
    admin = await org.token("ada", "admin", ALL_SCOPES)
    before = await members.list_tokens(org.gw.store, "owner", actor=OPERATOR)
    error = error_of(await org.call(admin, PREFIX + "grants__create", {"member": "owner"}))
    assert (error["code"], error["permission"]) == ("permission_required", "owners:write")
    answer = await rest(org, admin, "grants__create", {"member": "owner"})
    assert answer.status_code == 403
    assert answer.json()["error"]["permission"] == "owners:write"
    assert await members.list_tokens(org.gw.store, "owner", actor=OPERATOR) == before  # nothing was minted
    minted = await org.control(org.owner, "grants__create", {"member": "owner", "scopes": "mcp:read"})
    assert minted["token"]  # the owner still can


async def test_r7_1_admin_cannot_revoke_an_owner_grant(org: Org) -> None:
    admin = await org.token("ada", "admin", ALL_SCOPES)
    grant_id = await owner_grant_id(org)
    error = error_of(await org.call(admin, PREFIX + "grants__revoke", {"id": grant_id}))
    assert (error["code"], error["permission"]) == ("permission_required", "owners:write")
    assert (await rest(org, admin, "grants__revoke", {"id": grant_id})).status_code == 403
    grant = await member_store.get_grant(org.gw.store.db, grant_id)
    assert grant is not None
    assert grant.revoked_at is None
    assert await org.control(org.owner, "members__list")  # the owner's token still works
    own = await org.token("ada", "admin", ALL_SCOPES)
    own_id = next(
        g.id for g in await members.list_tokens(org.gw.store, "ada", actor=OPERATOR) if g.revoked_at is None
    )
    assert await org.control(own, "grants__revoke", {"id": own_id}) == {"revoked": own_id}


@pytest.mark.parametrize(
    ("operation", "arguments"),
    [
        ("members__update_role", {"name": "owner", "role": "admin"}),
        ("members__suspend", {"name": "owner"}),
        ("members__remove", {"name": "owner"}),
        ("members__invite", {"name": "usurper", "role": "owner"}),
        ("members__update_role", {"name": "ada", "role": "owner"}),
    ],
)
async def test_r7_1_every_act_on_an_owner_is_owner_only(
    org: Org, operation: str, arguments: dict[str, Any]
) -> None:
    admin = await org.token("ada", "admin", ALL_SCOPES)
    error = error_of(await org.call(admin, PREFIX + operation, arguments))
    assert (error["code"], error["permission"]) == ("permission_required", "owners:write")
    roles = {m.name: (m.role, m.status) for m in await member_store.list_members(org.gw.store.db)}
    assert roles["owner"] == ("owner", "active")
    assert roles["ada"] == ("admin", "active")
    assert "usurper" not in roles


async def test_r7_3_a_grant_mints_only_grants_within_its_own_scopes(org: Org) -> None:
    writer = await org.token("wes", "admin", "mcp:read mcp:write")
    for scopes in (ALL_SCOPES, "mcp:destructive"):
        error = error_of(
            await org.call(writer, PREFIX + "grants__create", {"member": "wes", "scopes": scopes})
        )
        assert (error["code"], error["scope"]) == ("scope_required", "mcp:destructive")
    answer = await rest(org, writer, "grants__create", {"member": "wes", "scopes": "mcp:tools"})
    assert (answer.status_code, answer.json()["error"]["scope"]) == (403, "mcp:tools")
    held = {frozenset(g.scopes) for g in await members.list_tokens(org.gw.store, "wes", actor=OPERATOR)}
    assert held == {frozenset({"mcp:read", "mcp:write"})}
    narrower = await org.control(writer, "grants__create", {"member": "wes", "scopes": "mcp:read"})
    assert narrower["token"]


async def test_r7_5_a_grant_mints_no_grant_that_outlives_it(org: Org) -> None:
    await org.token("eve", "admin", "mcp:read")
    grant, token = await members.create_token(
        org.gw.store, "eve", "mcp:read mcp:write", expires_days=1, actor=OPERATOR
    )
    minted = await org.control(token, "grants__create", {"member": "eve", "scopes": "mcp:read"})
    stored = await member_store.get_grant(org.gw.store.db, minted["id"])
    assert stored is not None
    assert stored.expires_at == grant.expires_at  # no expiry asked: it ends with its creator
    actor = await org.gw.bearers.authenticate(token)
    with pytest.raises(InvalidArguments) as refused:
        await members.create_token(org.gw.store, "eve", "mcp:read", expires_days=30, actor=actor)
    assert [e["pointer"] for e in refused.value.errors] == ["/expires_days"]
    assert (
        len(await members.list_tokens(org.gw.store, "eve", actor=OPERATOR)) == 3
    )  # the refused one was not stored


# --- finding 3: a connection's secret reaches every member ---------------------------------------


async def test_r13_3_secret_a_failing_stdio_server_prints_is_redacted_before_it_is_stored(
    org: Org, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"FIXTURE_API_KEY": SECRET, "FIXTURE_FAIL_AT_START": "1"}
    with caplog.at_level("DEBUG"):
        row = await add_connection(
            org.gw, "leaky", connector="Helpdesk", command=FIXTURE_SERVER, env=env, actor=OPERATOR
        )
    try:
        assert row.status == "error"
        stored = await conn_store.get_connection(org.gw.store.db, "leaky")
        assert stored is not None
        assert stored.reason is not None
        assert "[REDACTED]" in stored.reason  # the reason is still there, without the secrets
        assert "helpdesk refused key" in stored.reason
        member = await org.token("mia")
        seen = [
            json.dumps(await org.control(member, "connections__list")),
            json.dumps(await org.control(member, "connections__get", {"name": "leaky"})),
            json.dumps(await org.control(org.owner, "connections__refresh", {"name": "leaky"})),
            (await rest(org, member, "connections__list", {})).text,
            json.dumps(await cli_list(org)),
            json.dumps(error_of(await org.execute(member, "leaky__add_numbers", {"a": 1, "b": 2}))),
            caplog.text,
        ]
        assert all("leaky" in text for text in seen[:5])
        for text in (stored.reason, *seen):
            assert SECRET not in text
            assert JWT_SIGNATURE not in text
    finally:
        await remove_connection(org.gw, "leaky", principal=OPERATOR)


async def test_r13_3_a_reason_stored_before_redaction_is_redacted_on_read(org: Org) -> None:
    row = await add_connection(
        org.gw,
        "legacy",
        connector="Helpdesk",
        url=org.upstream,
        headers={"X-Api-Key": SECRET},
        actor=OPERATOR,
    )
    assert row.status == "active"
    try:
        await conn_store.set_status(
            org.gw.store.db, "legacy", "error", f"boom: key {SECRET} sess {JWT_SHAPED}"
        )
        await sync_from_store(org.gw)  # the follower's step: the row changed behind its back
        member = await org.token("mia")
        inactive = await org.execute(member, "legacy__echo_message", {"message": "hi"})
        diagnosed = await org.call(org.owner, PREFIX + "tools__diagnose", {"name": "legacy__echo_message"})
        for text in (
            json.dumps(await org.control(member, "connections__list")),
            (await rest(org, member, "connections__get", {"name": "legacy"})).text,
            json.dumps(await cli_list(org)),
            json.dumps(inactive.structured_content),
            json.dumps(diagnosed.structured_content),
        ):
            assert "boom: key [REDACTED]" in text
            assert SECRET not in text
            assert JWT_SIGNATURE not in text
    finally:
        await remove_connection(org.gw, "legacy", principal=OPERATOR)


# --- R-13.3: the command line of a stdio connection is the owners' alone --------------------------


async def test_r13_3_stdio_command_line_is_shown_to_owners_only_and_env_values_to_no_one(org: Org) -> None:
    env = {"FIXTURE_API_KEY": SECRET}
    row = await add_connection(
        org.gw, "vault", connector="Vault", command=FIXTURE_SERVER, env=env, actor=OPERATOR
    )
    assert row.status == "active", row.reason
    try:
        command_line = " ".join(FIXTURE_SERVER)
        admin = await org.token("ada", "admin", ALL_SCOPES)
        member = await org.token("mia")
        for token in (admin, member):
            listed = await org.control(token, "connections__list")
            vault = next(c for c in listed if c["name"] == "vault")
            assert (vault["transport"], vault["target"]) == ("stdio", None)
            got = await org.control(token, "connections__get", {"name": "vault"})
            assert got["target"] is None
            body = (await rest(org, token, "connections__get", {"name": "vault"})).text
            assert "tests.fixtures" not in json.dumps([listed, got]) + body
        owner_view = await org.control(org.owner, "connections__get", {"name": "vault"})
        assert owner_view["target"] == command_line
        cli_vault = next(c for c in await cli_list(org) if c["name"] == "vault")
        assert cli_vault["target"] == command_line
        for text in (json.dumps(owner_view), json.dumps(cli_vault)):
            assert SECRET not in text
    finally:
        await remove_connection(org.gw, "vault", principal=OPERATOR)


# --- finding 11: any admin token can run a command on the host -----------------------------------


async def test_r13_3_stdio_connection_over_mcp_or_rest_is_forbidden_by_default(
    org: Org, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    create = {"name": "shell", "connector": "Shell", "command": command}
    error = error_of(await org.call(org.owner, PREFIX + "connections__create", create))
    assert error["code"] == "forbidden"
    answer = await rest(org, org.owner, "connections__create", {**create, "command": shlex.join(command)})
    assert (answer.status_code, answer.json()["error"]["code"]) == (403, "forbidden")
    assert await conn_store.get_connection(org.gw.store.db, "shell") is None
    assert not marker.exists()
    http = {"name": "desk-web", "connector": "Helpdesk", "url": org.upstream}
    try:  # a URL stays open to the remote faces
        assert (await org.control(org.owner, "connections__create", http))["status"] == "active"
    finally:
        await remove_connection(org.gw, "desk-web", principal=OPERATOR)


async def test_r13_3_allow_remote_stdio_lets_the_remote_faces_add_a_stdio_server(
    org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(org.gw, "settings", org.gw.settings.model_copy(update={"allow_remote_stdio": True}))
    create = {"name": "remote-stdio", "connector": "Helpdesk", "command": FIXTURE_SERVER}
    try:
        assert (await org.control(org.owner, "connections__create", create))["status"] == "active"
    finally:
        await remove_connection(org.gw, "remote-stdio", principal=OPERATOR)


async def test_r13_3_update_to_a_stdio_command_or_its_env_is_forbidden_to_a_token_by_default(
    org: Org,
) -> None:
    admin = await org.gw.bearers.authenticate(await org.token("ada", "admin", ALL_SCOPES))
    with pytest.raises(Forbidden):
        await update_connection(org.gw, "desk", command=FIXTURE_SERVER, actor=admin)
    desk = await conn_store.get_connection(org.gw.store.db, "desk")
    assert desk is not None
    assert (desk.transport, desk.command, desk.url) == ("http", None, org.upstream)
    row = await add_connection(org.gw, "local", connector="Local", command=FIXTURE_SERVER, actor=OPERATOR)
    try:
        with pytest.raises(Forbidden):
            await update_connection(org.gw, "local", env={"LD_PRELOAD": "/tmp/x.so"}, actor=admin)
        with pytest.raises(InvalidArguments):
            await update_connection(org.gw, "local", command=["a", 1], actor=admin)  # type: ignore[list-item]
        relabelled = await update_connection(org.gw, "local", connector="Local Two", actor=admin)
        assert (relabelled.connector, relabelled.status, relabelled.command) == ("Local Two", "active", None)
        moved = await update_connection(
            org.gw, "local", env={"FIXTURE_API_KEY": SECRET}, actor=OPERATOR
        )  # the host may
        assert (moved.status, moved.command) == ("active", row.command)
    finally:
        await remove_connection(org.gw, "local", principal=OPERATOR)


# --- finding 7: one malformed control-plane call breaks listing for everyone -------------------


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [
        ({"command": ["a", 1]}, "/command/1"),
        ({"command": []}, "/command"),
        ({"command": {"a": "b"}}, "/command"),
        ({"command": 'python -c "unbalanced'}, "/command"),
        ({"url": "file:///etc/passwd"}, "/url"),
        ({"url": 7}, "/url"),
        ({"url": "http://ok.example/mcp", "name": "Bad Name"}, "/name"),
        ({"url": "http://ok.example/mcp", "connector": ["x"]}, "/connector"),
        ({"url": "http://ok.example/mcp", "connector": "x" * 81}, "/connector"),
    ],
)
async def test_r13_malformed_connection_definition_is_refused_before_it_is_saved(
    org: Org, arguments: dict[str, Any], pointer: str
) -> None:
    create = {"name": "broken", "connector": "Helpdesk", **arguments}
    with pytest.raises(InvalidArguments) as refused:  # the gateway's own check, whatever the face
        await add_connection(org.gw, **create, actor=await org.gw.bearers.authenticate(org.owner))
    assert pointer in [e["pointer"] for e in refused.value.errors]
    error = error_of(await org.call(org.owner, PREFIX + "connections__create", create))
    assert error["code"] == "invalid_arguments"
    answer = await rest(org, org.owner, "connections__create", create)
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "invalid_arguments")
    assert [r.name for r in await conn_store.list_connections(org.gw.store.db)] == ["desk"]
    assert [c["name"] for c in await org.control(org.owner, "connections__list")] == ["desk"]


@pytest.mark.parametrize(
    ("values", "pointer"),
    [
        ({"env": {"FIXTURE_API_KEY": 1}}, "/env/FIXTURE_API_KEY"),
        ({"env": {"A=B": "x"}}, "/env/A=B"),
        ({"env": ["A=B"]}, "/env"),
        ({"headers": {"X-Key": "a\r\nInjected: yes"}}, "/headers/X-Key"),
        ({"headers": {"Bad Header": "x"}}, "/headers/Bad Header"),
        ({"headers": {"X-Key": {"nested": "x"}}}, "/headers/X-Key"),
    ],
)
async def test_r13_malformed_env_or_headers_are_refused_before_they_are_saved(
    org: Org, values: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(InvalidArguments) as refused:
        await add_connection(
            org.gw, "broken", connector="Helpdesk", url=org.upstream, actor=OPERATOR, **values
        )
    assert pointer in [e["pointer"] for e in refused.value.errors]
    assert await conn_store.get_connection(org.gw.store.db, "broken") is None


async def test_r13_1_a_malformed_stored_row_lists_as_error_instead_of_failing_every_face(org: Org) -> None:
    bad = ConnectionRow(
        name="mangled",
        connector="Helpdesk",
        transport="stdio",
        command=["a", 1],  # type: ignore[list-item]  # as the unchecked create once stored it
        url=None,
        secrets=None,
        status="pending",
        reason=None,
        tool_count=0,
        catalog_version=0,
    )
    await conn_store.insert_connection(org.gw.store.db, bad)
    try:
        member = await org.token("mia")
        faces = [
            await org.control(member, "connections__list"),
            await org.control(org.owner, "connections__list"),
            (await rest(org, org.owner, "connections__list", {})).json()["result"],
            await cli_list(org),
        ]
        for listed in faces:
            mangled = next(c for c in listed if c["name"] == "mangled")
            assert mangled["status"] == "error"
            assert "malformed" in mangled["reason"]
            assert next(c for c in listed if c["name"] == "desk")["status"] == "active"
        got = await org.control(org.owner, "connections__get", {"name": "mangled"})
        assert got["status"] == "error"
        refreshed = await org.control(org.owner, "connections__refresh", {"name": "mangled"})
        assert refreshed["status"] == "error"  # nothing was started from it
    finally:
        await anyio.to_thread.run_sync(lambda: cli(org.db_url, "connections", "remove", "mangled"))
    assert [c["name"] for c in await cli_list(org)] == ["desk"]
