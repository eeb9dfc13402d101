"""Inputs are validated once, by the declared schema, on every face; nothing internal leaks (R-3.3)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import jsonschema
import pytest
from sqlalchemy import text

from tests.conftest import Process
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from tests.principals import OPERATOR
from tests.web.asgi import asgi_client, call_tool, in_band_error, rest, rpc
from toolcrib.errors import StoreBusy
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.faults import in_band
from toolcrib.policy.classify import classify_operation

pytestmark = pytest.mark.anyio

PREFIX = "toolcrib__"
LEAKS = ("Traceback", 'File "', "sqlite", "sqlalchemy", "SELECT", "ValueError", "TypeError", "AttributeError")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Face:
    gw: Gateway
    http: httpx2.AsyncClient
    owner: str


@pytest.fixture(scope="module")
async def face(tmp_path_factory: pytest.TempPathFactory, fixture_http: Process) -> AsyncIterator[Face]:
    settings = settings_for(tmp_path_factory.mktemp("faces"), policy_cache_seconds=0)
    async with open_gateway(settings) as gw:
        token = await owner_token(gw)
        assert (
            await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        ).status == "active"
        async with asgi_client(gw) as http:
            yield Face(gw, http, token)


def _pointers(error: dict[str, object]) -> list[object]:
    errors = error["errors"]
    assert isinstance(errors, list)
    return [e["pointer"] for e in errors]


def _no_leak(body: str) -> None:
    assert not [word for word in LEAKS if word in body], body


@pytest.mark.parametrize(
    ("name", "arguments", "pointer"),
    [
        ("execute_tool", {"tool": 5}, "/tool"),
        ("execute_tool", {"action_id": ["x"]}, "/action_id"),
        ("execute_tool", {"tool": "desk__add_numbers", "arguments": "a=1"}, "/arguments"),
        ("search_tools", {"query": "add numbers", "limit": "3"}, "/limit"),
        ("search_tools", {"query": "add numbers", "limit": 9}, "/limit"),
        ("search_tools", {"limit": 3}, "/query"),
        ("search_tools", {"query": ["a", "list"]}, "/query"),  # a long query is cut, not refused
        (PREFIX + "results__read", {"result_id": "r", "offset": "abc"}, "/offset"),
        (PREFIX + "members__invite", {"name": 7, "role": "member"}, "/name"),
        (PREFIX + "audit__search", {"since": "yesterday"}, "/since"),
    ],
)
async def test_r3_3_a_wrong_argument_type_is_in_band_invalid_arguments_with_its_pointer_over_mcp(
    face: Face, name: str, arguments: dict[str, object], pointer: str
) -> None:
    result = await call_tool(face.http, face.owner, name, arguments)
    error = in_band_error(result)
    assert error["code"] == "invalid_arguments"
    assert pointer in _pointers(error)
    _no_leak(json.dumps(result))


async def test_r3_3_rest_results_read_with_a_text_offset_is_400_invalid_arguments_at_offset(
    face: Face,
) -> None:
    response = await rest(face.http, face.owner, "results/read", b'{"result_id": "r", "offset": "abc"}')
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_arguments"
    assert _pointers(error) == ["/offset"]


async def test_r10_2_rest_and_mcp_answer_the_same_error_body_for_the_same_input(face: Face) -> None:
    arguments = {"name": ["x"], "role": 3}
    over_rest = await rest(face.http, face.owner, "members/invite", json.dumps(arguments).encode())
    over_mcp = await call_tool(face.http, face.owner, PREFIX + "members__invite", arguments)
    assert over_rest.status_code == 400
    assert over_rest.json() == over_mcp["structuredContent"]
    assert sorted(_pointers(over_rest.json()["error"])) == ["/name", "/role"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [(b"{not json", ""), (b"[1, 2]", ""), (b"\xff\xfe", ""), (b"[" * 100_000, "")],
)
async def test_r3_3_rest_body_that_is_not_a_json_object_is_400_in_our_own_words(
    face: Face, body: bytes, pointer: str
) -> None:
    response = await rest(face.http, face.owner, "members/list", body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_arguments"
    assert _pointers(response.json()["error"]) == [pointer]
    _no_leak(response.text)
    assert "Expecting" not in response.text  # Python's json message


async def test_r3_3_a_lone_surrogate_in_a_rest_body_is_400_invalid_arguments_not_a_store_crash(
    face: Face,
) -> None:
    response = await rest(face.http, face.owner, "connections/get", b'{"name": "desk\\udfff"}')
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_arguments"


async def test_r3_3_frozen_value_that_is_not_json_says_so_without_pythons_message(face: Face) -> None:
    arguments = {"account": "desk", "tool": "add_numbers", "param": "a", "value": "{oops"}
    error = in_band_error(await call_tool(face.http, face.owner, PREFIX + "frozen__set", arguments))
    assert error["code"] == "invalid_arguments"
    assert error["errors"] == [{"pointer": "/value", "message": "not JSON text"}]


async def test_r10_2_every_operation_is_annotated_by_its_classification(face: Face) -> None:
    tools = (await rpc(face.http, face.owner, "tools/list", {})).json()["result"]["tools"]
    hints = {"read": {"readOnlyHint": True}, "write": {"destructiveHint": False}}
    control = [t for t in tools if t["name"].startswith(PREFIX)]
    assert len(control) >= 23
    for tool in control:
        risk = classify_operation(tool["name"].rpartition("__")[2])
        assert tool["annotations"] == hints.get(risk, {"destructiveHint": True}), tool["name"]
        assert tool["inputSchema"]["type"] == "object"
    by_name = {t["name"]: t for t in tools}
    assert by_name[PREFIX + "members__remove"]["annotations"] == {"destructiveHint": True}
    assert by_name[PREFIX + "connections__list"]["annotations"] == {"readOnlyHint": True}
    assert by_name[PREFIX + "members__invite"]["annotations"] == {"destructiveHint": False}


async def test_r10_2_search_tools_declares_an_output_schema_its_answers_satisfy(face: Face) -> None:
    tools = (await rpc(face.http, face.owner, "tools/list", {})).json()["result"]["tools"]
    schema = next(t for t in tools if t["name"] == "search_tools")["outputSchema"]
    found = await call_tool(face.http, face.owner, "search_tools", {"query": "add two numbers"})
    assert found["structuredContent"]["results"]
    jsonschema.validate(found["structuredContent"], schema)


async def test_r3_3_a_failing_store_answers_internal_error_with_a_logged_id_and_no_sql(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_gateway(settings_for(tmp_path)) as gw:
        token = await owner_token(gw)
        async with gw.store.db.begin() as conn:  # the audit table is gone: every audit read fails in SQL
            await conn.execute(text("ALTER TABLE audit RENAME TO audit_elsewhere"))
        async with asgi_client(gw) as http:
            with caplog.at_level(logging.ERROR, logger="toolcrib.incidents"):
                over_mcp = await call_tool(http, token, PREFIX + "audit__search", {})
                over_rest = await rest(http, token, "audit/search", b"{}")
    error = in_band_error(over_mcp)
    assert error["code"] == "internal_error"
    assert over_rest.status_code == 500
    assert over_rest.json()["error"]["code"] == "internal_error"
    for body in (json.dumps(over_mcp), over_rest.text):
        _no_leak(body)
        assert "audit_elsewhere" not in body
        assert "no such table" not in body
    logged = {r.getMessage().rpartition(" ")[2]: r for r in caplog.records}
    for incident in (error["id"], over_rest.json()["error"]["id"]):
        assert logged[incident].exc_info is not None  # the traceback is in the server log, under that id
    assert error["id"] != over_rest.json()["error"]["id"]


def test_r3_3_store_busy_is_in_band_store_busy_with_a_fixed_message() -> None:
    error = in_band(StoreBusy("database is locked: UPDATE grants SET last_used = ?"))
    assert error.to_payload() == {"error": {"code": "store_busy", "message": StoreBusy.public_message}}


async def test_r2_5_capability_surface_validates_its_own_argument_names(tmp_path: Path) -> None:
    async with open_gateway(settings_for(tmp_path, surface="capability")) as gw:
        token = await owner_token(gw)
        async with asgi_client(gw) as http:
            run = await call_tool(http, token, "run_capability", {"actionId": 5, "params": []})
            discover = await call_tool(http, token, "discover_capability", {"intent": {"a": 1}})
    assert sorted(_pointers(in_band_error(run))) == ["/actionId", "/params"]
    assert _pointers(in_band_error(discover)) == ["/intent"]
