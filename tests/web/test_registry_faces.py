"""The connector catalog on the MCP and REST faces (#35, R-13.9): the same operations as the
command line, the same permission, and the stdio rule (R-13.3) for a registry's packages too."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx2
import pytest

from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, serve_asgi, settings_for
from tests.fixtures.registry_server import load_entries, registry_app
from tests.principals import OPERATOR
from tests.web.asgi import asgi_client, call_tool, in_band_error, rest, rpc
from toolcrib.gateway.core import Gateway, key_file
from toolcrib.gateway.identity import members
from toolcrib.store import connections as store

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Face:
    gw: Gateway
    http: httpx2.AsyncClient
    owner: str
    member: str


@pytest.fixture(scope="module")
async def face(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Face]:
    app = registry_app(load_entries(fixture_http.url, "/nonexistent/marker"))
    async with serve_asgi(app) as registry:
        settings = settings_for(
            tmp_path_factory.mktemp("registry-faces"), policy_cache_seconds=0, registry_url=[registry]
        )
        async with open_gateway(settings) as gw:
            owner = await owner_token(gw)
            await members.add_member(gw.store, "mia", "member", OPERATOR)
            _, member = await members.create_token(gw.store, "mia", members.DEFAULT_SCOPES, actor=OPERATOR)
            async with asgi_client(gw) as http:
                yield Face(gw, http, owner, member)


async def test_r13_9_search_is_a_control_plane_tool_over_mcp(face: Face) -> None:
    listed = (await rpc(face.http, face.owner, "tools/list", {})).json()["result"]["tools"]
    assert "toolcrib__connectors__search" in {t["name"] for t in listed}
    result = await call_tool(face.http, face.owner, "toolcrib__connectors__search", {"words": "time"})
    names = {s["name"] for s in result["structuredContent"]["result"]["servers"]}
    assert "io.github.example/time" in names
    assert "io.github.example/time-legacy" not in names


async def test_r13_9_a_member_may_not_search_the_catalog(face: Face) -> None:
    result = await call_tool(face.http, face.member, "toolcrib__connectors__search", {"words": "time"})
    assert in_band_error(result)["code"] == "permission_required"


async def test_r13_9_rest_adds_a_remote_with_its_secret_sealed(face: Face) -> None:
    body = {
        "name": "rclock",
        "from_registry": "io.github.example/remote-clock",
        "inputs": ["api_key=rest-s3cret-77"],
    }
    response = await rest(face.http, face.owner, "connections/create", json.dumps(body).encode())
    assert response.status_code == 200, response.text
    view = response.json()["result"]
    assert view["status"] == "active"
    assert view["from_registry"]["version"] == "1.1.0"
    assert "rest-s3cret-77" not in response.text
    row = await store.get_connection(face.gw.store.db, "rclock")
    assert row is not None
    assert row.secrets is not None
    assert "rest-s3cret-77" not in row.secrets


async def test_r13_3_a_registry_package_is_a_stdio_command_refused_over_rest(face: Face) -> None:
    body = {"name": "clock", "from_registry": "io.github.example/time"}
    response = await rest(face.http, face.owner, "connections/create", json.dumps(body).encode())
    assert response.json()["error"]["code"] == "forbidden"
    assert await store.get_connection(face.gw.store.db, "clock") is None


async def test_r13_3_a_package_whose_file_uv_would_check_is_not_even_installed_for_a_remote_face(
    face: Face,
) -> None:
    """Checking ``fileSha256`` installs the package (R-13.9): the stdio rule comes first, so a
    token that may not add a stdio command gets nothing downloaded or built on the host either."""
    body = {"name": "vclock", "from_registry": "io.github.example/time-verified"}
    response = await rest(face.http, face.owner, "connections/create", json.dumps(body).encode())
    assert response.json()["error"]["code"] == "forbidden"
    assert await store.get_connection(face.gw.store.db, "vclock") is None
    assert not (key_file(face.gw.settings).parent / "registry-envs").exists()
