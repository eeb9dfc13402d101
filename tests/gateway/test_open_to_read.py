"""#33: a command that only reads the store opens no gateway but the store alone, with
``open_to_read`` (no instance, no catalog, no background task), and shows exactly what the full
``open_gateway`` shows: connections with their redacted reasons (R-13.3), a malformed row as an
error (R-13.1), an OAuth connection with no start link, members, tokens and rate limits."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from toolcrib.errors import ConfigError
from toolcrib.gateway.connections.manage import connection_view, list_connections
from toolcrib.gateway.connections.shown import read_connections
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import rate_limits
from toolcrib.gateway.identity import members
from toolcrib.gateway.process import open_gateway
from toolcrib.gateway.reading import Reading, open_to_read
from toolcrib.settings import Settings
from toolcrib.store import connections as conn_store
from toolcrib.store.connections import ConnectionRow

pytestmark = pytest.mark.anyio

SECRET = "sk-live-abcdef1234567890"
CLIENT_SECRET = "client-secret-of-the-files-app"


async def _reads(gw: Gateway | Reading) -> dict[str, Any]:
    """What each command that opens with ``open_to_read`` shows, read through ``gw`` (a gateway's
    own listing, or the reading one)."""
    operator = await members.operator_principal(gw.store)
    if isinstance(gw, Gateway):
        rows = await list_connections(gw, operator)
    else:
        rows = await read_connections(gw, operator)
    return {
        "connections": [connection_view(r) for r in rows],
        "members": [members.member_view(m) for m in await members.list_members(gw.store, operator)],
        "tokens": [members.grant_view(g) for g in await members.list_tokens(gw.store, None, actor=operator)],
        "limits": [rate_limits.limit_view(r) for r in await rate_limits.list_limits(gw.policy, operator)],
    }


def _row(name: str, **values: Any) -> ConnectionRow:
    base: dict[str, Any] = {
        "name": name,
        "connector": "CRM",
        "transport": "http",
        "command": None,
        "url": "https://crm.example/mcp",
        "secrets": None,
        "status": "error",
        "reason": None,
        "tool_count": 0,
        "catalog_version": 0,
    }
    return ConnectionRow(**{**base, **values})


async def _organization(gw: Gateway) -> None:
    await members.init_owner(gw.store, "owner")
    operator = await members.operator_principal(gw.store)
    await members.add_member(gw.store, "ann", "member", operator)
    sealed = gw.store.box.seal({"env": {}, "headers": {"Authorization": f"Bearer {SECRET}"}})
    for row in (
        _row("crm", secrets=sealed, reason=f"401 for Bearer {SECRET}"),
        _row("desk", transport="stdio", url=None, command=["desk-server", "--port", "1"], status="active"),
        _row("drive", auth="oauth", reason="authorize it first"),
        _row(
            "files",
            auth="oauth",
            secrets=gw.store.box.seal({"oauth": {"client_id": "files-app", "client_secret": CLIENT_SECRET}}),
            reason=f"the provider refused {CLIENT_SECRET}",
        ),
        _row("broken", transport="stdio", url=None, command=["a", 1]),
    ):
        await conn_store.insert_connection(gw.store.db, row)
    await rate_limits.set_limit(gw, operator, member="ann", per_minute=5, per_day=None)


async def test_a_read_command_opened_to_read_shows_what_the_full_gateway_shows(db_url: str) -> None:
    settings = Settings(database_url=db_url, semantic=False)
    async with open_gateway(settings, follow_changes=False) as gw:
        await _organization(gw)
        full = await _reads(gw)
    async with open_to_read(settings) as reading:
        read = await _reads(reading)
    assert read == full
    assert [c["name"] for c in read["connections"]] == ["broken", "crm", "desk", "drive", "files"]
    crm = next(c for c in read["connections"] if c["name"] == "crm")
    assert SECRET not in str(read)
    assert CLIENT_SECRET not in str(read)
    assert "refused" in next(c for c in read["connections"] if c["name"] == "files")["reason"]
    assert "401" in crm["reason"]
    assert next(c for c in read["connections"] if c["name"] == "broken")["status"] == "error"
    assert sorted(m["name"] for m in read["members"]) == ["ann", "owner"]
    assert (len(read["tokens"]), len(read["limits"])) == (1, 1)


@pytest.mark.parametrize("opening", ["open_gateway", "open_to_read"])
async def test_r13_3_a_key_that_is_no_key_is_refused_before_the_database_records_it(
    db_url: str, opening: str
) -> None:
    """The fingerprint of the first key a database sees binds every later process (R-15.2): a
    malformed ``TOOLCRIB_SECRET_KEY`` is refused before it is recorded, so the right one opens."""
    opens = {"open_gateway": lambda s: open_gateway(s, follow_changes=False), "open_to_read": open_to_read}
    with pytest.raises(ConfigError) as refused:
        async with opens[opening](Settings(database_url=db_url, secret_key="not-a-key", semantic=False)):
            pass
    assert refused.value.code == ConfigError.code
    good = Fernet.generate_key().decode()
    async with opens[opening](Settings(database_url=db_url, secret_key=good, semantic=False)) as gw:
        assert gw.store.box.open(gw.store.box.seal({"a": 1})) == {"a": 1}
