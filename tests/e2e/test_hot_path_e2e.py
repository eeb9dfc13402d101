"""Per-call work that need not be per call (#12), seen through a real gateway over real HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Process
from tests.e2e.mcpclient import connect
from tests.e2e.org import organization

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

LISTED = "toolcrib_surface_estimated_tokens_total"


async def _listed_tokens(base: str, token: str) -> float:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    return sum(
        s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
        if s.name == LISTED
    )


async def test_r3_1_execute_tool_does_not_build_the_tools_list_answer_on_every_call(
    tmp_path: Path, fixture_http: Process
) -> None:
    """The SDK looked a called tool's inputSchema up by running the whole tools/list handler (the
    caller's listing, its telemetry, the flat-listing size) on every tools/call with arguments."""
    async with organization(tmp_path, fixture_http) as org, connect(org.base, org.owner) as client:
        before = 0.0
        for n in range(4):
            arguments = {"tool": "desk__echo_message", "arguments": {"message": f"hi {n}"}}
            result = await client.call_tool("execute_tool", arguments)
            assert not result.is_error, result
            if n == 0:  # the SDK client may list once for itself (output schemas); not per call
                before = await _listed_tokens(org.base, org.owner)
        assert await _listed_tokens(org.base, org.owner) == before
