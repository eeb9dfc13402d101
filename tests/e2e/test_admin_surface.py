"""R-10.2's setting: the control plane behind one ``toolcrib__admin`` tool, still filtered by the
caller's permissions, each operation still validated by its own inputSchema."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Process
from tests.e2e.mcpclient import connect, error_code, gateway_payload
from tests.e2e.org import ALL_SCOPES, PREFIX, organization

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]


async def test_r10_2_single_admin_tool_runs_operations_by_their_own_schema(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http, admin_surface="single") as org:
        listed = await org.listed(org.owner)
        assert [n for n in listed if n.startswith(PREFIX)] == [PREFIX + "admin"]
        async with connect(org.base, org.owner) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            admin = tools[PREFIX + "admin"]
            assert "members__invite" in admin.input_schema["properties"]["operation"]["enum"]
            assert admin.annotations is not None
            assert admin.annotations.destructive_hint is True
            ran = await client.call_tool(PREFIX + "admin", {"operation": "members__list"})
            assert not ran.is_error
            assert "owner" in [m["name"] for m in gateway_payload(ran)["result"]]
            bad = await client.call_tool(PREFIX + "admin", {"operation": "members__invite", "arguments": {}})
            assert error_code(bad) == "invalid_arguments"
            pointers = [e["pointer"] for e in gateway_payload(bad)["error"]["errors"]]
            assert pointers
            assert all(p.startswith("/arguments") for p in pointers)
            unknown = await client.call_tool(PREFIX + "admin", {"operation": "members__explode"})
            assert error_code(unknown) == "invalid_arguments"


async def test_r10_1_single_admin_tool_lists_only_what_the_caller_may_use(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http, admin_surface="single") as org:
        member = await org.token("mia", "member", ALL_SCOPES)
        async with connect(org.base, member) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search_tools", "execute_tool", PREFIX + "admin"}
            admin = tools[PREFIX + "admin"]
            operations = admin.input_schema["properties"]["operation"]["enum"]
            assert set(operations) == {
                "connections__list",
                "connections__get",
                "results__read",
                "tools__diagnose",
                "grants__list",  # one's own grants, listed and revoked by their member
                "grants__revoke",
            }
            assert admin.annotations is not None
            assert admin.annotations.destructive_hint is True  # revoking is destructive
            refused = await client.call_tool(
                PREFIX + "admin",
                {"operation": "members__invite", "arguments": {"name": "x", "role": "member"}},
            )
            assert error_code(refused) == "permission_required"
