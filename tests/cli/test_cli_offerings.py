"""``toolcrib prompts list``, ``toolcrib resources list`` and ``toolcrib resources read URI
[--as MEMBER]``, and the same operations on REST (#34, R-16.1, R-16.2): the faces over the one
listing and reading of ``gateway.resources``; none of them is a tool over MCP (R-2.2)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from tests.conftest import FIXTURE_SERVER, cli, cli_json
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.principals import OPERATOR

from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.governance import restrictions
from toolcrib.gateway.identity import members


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('offerings') / 'toolcrib.db'}"
    cli(url, "init")
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    cli(url, "members", "invite", "--name", "mia", "--role", "member")
    cli(
        url, "restrictions", "create", "--effect", "block", "--target-kind", "user", "--target", "mia",
        "--account", "desk", "--tool", "secret_*",
    )  # fmt: skip
    return url


def test_r16_1_prompts_list_names_each_prompt_by_account(org: str) -> None:
    page = cli_json(org, "prompts", "list")
    assert isinstance(page, dict)
    assert sorted(p["name"] for p in page["prompts"]) == ["desk__connection_help", "desk__summarize_ticket"]
    assert page["nextCursor"] is None
    shown = cli(org, "prompts", "list").stdout
    assert "desk__summarize_ticket" in shown


def test_r16_2_resources_list_and_read_as_a_member_leave_out_what_is_withheld(org: str) -> None:
    owner = cli_json(org, "resources", "list")
    mia = cli_json(org, "resources", "list", "--as", "mia")
    assert isinstance(owner, dict)
    assert isinstance(mia, dict)
    secret = "toolcrib://desk/docs://secret-plan"
    assert secret in [r["uri"] for r in owner["resources"]]
    assert secret not in [r["uri"] for r in mia["resources"]]
    read = cli(org, "resources", "read", "toolcrib://desk/docs://handbook", "--as", "mia").stdout
    assert "be kind to customers" in read
    refused = cli(org, "resources", "read", secret, "--as", "mia", "--json", check=False)
    assert refused.returncode == 1
    assert '"code": "not_found"' in refused.stdout
    templates = cli_json(org, "resources", "list_templates")
    assert isinstance(templates, dict)
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "toolcrib://desk/tickets://{ticket_id}"
    ]


@pytest.mark.anyio
async def test_r16_2_rest_lists_and_reads_and_reading_as_another_member_needs_restrictions_read(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, policy_cache_seconds=0, connect_timeout_seconds=20)
    async with open_gateway(settings) as gw:
        owner = await owner_token(gw)
        await add_connection(gw, "desk", connector="Helpdesk", command=FIXTURE_SERVER, actor=OPERATOR)
        await members.add_member(gw.store, "mia", "member", actor=OPERATOR)
        _, mia = await members.create_token(gw.store, "mia", "mcp:tools mcp:read", actor=OPERATOR)
        await restrictions.add_restriction(
            gw.store,
            effect="block",
            target_kind="user",
            target="mia",
            account="desk",
            tool="secret_*",
            actor=OPERATOR,
        )
        async with serve(gw) as base, httpx2.AsyncClient(base_url=base, timeout=60) as http:

            async def post(token: str, path: str, body: dict[str, object]) -> httpx2.Response:
                return await http.post(path, json=body, headers={"Authorization": f"Bearer {token}"})

            prompts = await post(mia, "/api/prompts/list", {})
            as_mia = await post(owner, "/api/resources/list", {"member": "mia"})
            read = await post(mia, "/api/resources/read", {"uri": "toolcrib://desk/docs://handbook"})
            withheld = await post(mia, "/api/resources/read", {"uri": "toolcrib://desk/docs://secret-plan"})
            spying = await post(mia, "/api/resources/list", {"member": "owner"})
            openapi = (await http.get("/api/openapi.json")).json()
    assert prompts.status_code == 200
    assert "desk__summarize_ticket" in [p["name"] for p in prompts.json()["result"]["prompts"]]
    uris = [r["uri"] for r in as_mia.json()["result"]["resources"]]
    assert "toolcrib://desk/docs://handbook" in uris
    assert "toolcrib://desk/docs://secret-plan" not in uris
    assert read.json()["result"]["contents"][0]["text"] == "The handbook: be kind to customers."
    assert withheld.status_code == 404
    assert withheld.json()["error"]["code"] == "not_found"
    assert spying.status_code == 403
    assert spying.json()["error"]["code"] == "permission_required"
    assert "/api/resources/read" in openapi["paths"]
