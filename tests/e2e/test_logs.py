"""#13: one structured log line per request and per tool call, JSON under TOOLCRIB_LOG_FORMAT=json;
member, operation, outcome and duration, never the arguments or the token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURE_SERVER, Process, cli, cli_json, start_gateway
from tests.e2e.mcpclient import connect

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SECRET_VALUE = 918273645


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Process, str, Path]]:
    db = tmp_path_factory.mktemp("logs") / "toolcrib.db"
    url = f"sqlite:///{db}"
    owner = cli_json(url, "init")
    assert isinstance(owner, dict)
    cli(url, "connections", "add", "desk", "--connector", "Helpdesk", "--command", " ".join(FIXTURE_SERVER))
    gateway = start_gateway(url, {"TOOLCRIB_LOG_FORMAT": "json"})
    yield gateway, str(owner["token"]), db.with_suffix(".log")
    gateway.stop()


def _events(log: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [e for e in lines if "event" in e]


async def test_13_each_request_and_tool_call_is_one_json_line_without_arguments_or_token(
    served: tuple[Process, str, Path],
) -> None:
    gateway, token, log = served
    async with connect(gateway.url, token) as client:
        done = await client.call_tool(
            "execute_tool", {"tool": "desk__add_numbers", "arguments": {"a": SECRET_VALUE, "b": 1}}
        )
        assert not done.is_error
        missing = await client.call_tool("execute_tool", {"tool": "desk__nothing_here", "arguments": {}})
        assert missing.is_error
    gateway.stop()  # flushes the log
    text = log.read_text()
    assert str(SECRET_VALUE) not in text
    assert token not in text
    events = _events(log)
    calls = [e for e in events if e["event"] == "tool_call"]
    assert [(e["member"], e["operation"], e["outcome"]) for e in calls] == [
        ("owner", "execute_tool", "ok"),
        ("owner", "execute_tool", "not_found"),
    ]
    upstream = [e for e in events if e["event"] == "upstream_call"]
    assert [(e["operation"], e["outcome"]) for e in upstream] == [("desk__add_numbers", "ok")]
    requests = [e for e in events if e["event"] == "request"]
    assert any(
        e["operation"] == "POST /mcp" and e["outcome"] == "200" and e["member"] == "owner" for e in requests
    )
    assert all(isinstance(e["duration_ms"], int | float) and e["duration_ms"] >= 0 for e in calls + requests)
    assert all(line.startswith("{") for line in text.splitlines() if line.strip())
