"""Approvals for calls a rule names (#14; R-11.2's approval step) and the upstream's own questions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from sqlalchemy import select

from tests.e2e.flow import Served, audit_rows, client, desk_gateway, read_marker
from tests.e2e.mcpclient import gateway_payload
from tests.e2e.org import ALL_SCOPES, PREFIX
from tests.principals import OPERATOR
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.store.tables import approvals

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_each_store")]

PURGE = "desk__purge_records"


async def _member(served: Served, name: str = "mia", role: str = "member") -> str:
    await members.add_member(served.gw.store, name, role, actor=OPERATOR)
    return (await members.create_token(served.gw.store, name, ALL_SCOPES, actor=OPERATOR))[1]


async def _require_destructive(served: Served) -> None:
    async with client(served.base, served.owner) as c:
        result = await c.call_tool(PREFIX + "approvals__set", {"risk": "destructive", "account": "desk"})
    assert not result.is_error, result
    rules = gateway_payload(result)["result"]
    assert [(r["classification"], r["account"], r["role"]) for r in rules] == [("destructive", "desk", None)]


async def _kept_arguments(gw: Gateway) -> list[str | None]:
    """The sealed arguments column of every approval in the store."""
    async with gw.store.db.read() as conn:
        return [r[0] for r in (await conn.execute(select(approvals.c.arguments))).all()]


def _purge(marker: Path) -> dict[str, Any]:
    return {"tool": PURGE, "arguments": {"marker": str(marker)}}


def _answering(action: str, asked: list[str]) -> Any:
    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action)  # type: ignore[arg-type]

    return answer


@pytest.mark.parametrize(("stateless", "mode"), [(True, "auto"), (False, "auto"), (False, "legacy")])
async def test_14_a_member_who_accepts_the_elicitation_runs_the_call_and_is_audited_as_approver(
    tmp_path: Path, stateless: bool, mode: str
) -> None:
    """The question shows the exact tool, account and arguments; ``accept`` runs the call once."""
    marker, asked = tmp_path / "purged.txt", []
    async with desk_gateway(tmp_path, stateless=stateless) as served:
        await _require_destructive(served)
        mia = await _member(served)
        async with client(served.base, mia, mode=mode, elicitation_callback=_answering("accept", asked)) as c:
            result = await c.call_tool("execute_tool", _purge(marker))
        rows = await audit_rows(served.gw, PURGE)
        kept = await _kept_arguments(served.gw)
    assert not result.is_error, result
    assert kept
    assert set(kept) == {None}  # the answered approval forgot the call's arguments
    assert read_marker(marker) == "purged"
    assert len(asked) == 1
    assert PURGE in asked[0]
    assert "desk" in asked[0]
    assert json.dumps(str(marker))[1:-1] in asked[0]
    assert [(r.outcome, r.approved, r.approved_by) for r in rows] == [("ok", True, "mia")]


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_14_a_declined_elicitation_answers_approval_declined_and_never_calls_upstream(
    tmp_path: Path, action: str, mode: str
) -> None:
    marker, asked = tmp_path / "purged.txt", []
    async with desk_gateway(tmp_path, stateless=False) as served:
        await _require_destructive(served)
        mia = await _member(served)
        async with client(served.base, mia, mode=mode, elicitation_callback=_answering(action, asked)) as c:
            result = await c.call_tool("execute_tool", _purge(marker))
        rows = await audit_rows(served.gw, PURGE)
        kept = await _kept_arguments(served.gw)
    assert result.is_error
    assert kept
    assert set(kept) == {None}  # the answered approval forgot the call's arguments
    assert gateway_payload(result)["error"]["code"] == "approval_declined"
    assert asked
    assert not marker.exists()
    assert [(r.outcome, r.approved, r.error_code) for r in rows] == [("error", False, "approval_declined")]


async def _rest(served: Served, token: str, method: str, path: str, body: Any = None) -> httpx2.Response:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        return await http.request(method, served.base + path, json=body)


@pytest.mark.parametrize(("stateless", "mode"), [(True, "auto"), (True, "legacy"), (False, "legacy")])
async def test_14_without_elicitation_the_call_answers_approval_required_and_an_approval_runs_it_once(
    tmp_path: Path, stateless: bool, mode: str
) -> None:
    """A client that cannot be asked gets ``approval_required`` with the approval's id and link;
    an admin approves it (REST, the same operation as the MCP tool); the same call then runs once,
    audited with the approver; a call with other arguments is not covered."""
    marker = tmp_path / "purged.txt"
    async with desk_gateway(tmp_path, stateless=stateless) as served:
        await _require_destructive(served)
        mia = await _member(served)
        async with client(served.base, mia, mode=mode) as c:
            held = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]
            assert held["code"] == "approval_required"
            approval = held["approval_id"]
            assert held["approval_url"].endswith(f"/admin/approvals/{approval}")
            assert not marker.exists()
            shown = await _rest(served, served.owner, "GET", f"/api/approvals/{approval}")
            assert shown.status_code == 200
            assert shown.json()["operation"] == PURGE
            refused = await _rest(served, mia, "POST", "/api/approvals/approve", {"id": approval})
            assert refused.json()["error"]["code"] == "permission_required"
            approved = await _rest(served, served.owner, "POST", "/api/approvals/approve", {"id": approval})
            assert approved.status_code == 200
            assert approved.json()["result"]["status"] == "approved"
            other = await c.call_tool("execute_tool", _purge(tmp_path / "other.txt"))
            assert gateway_payload(other)["error"]["code"] == "approval_required"
            ran = await c.call_tool("execute_tool", _purge(marker))
            assert not ran.is_error, ran
            again = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]
        rows = await audit_rows(served.gw, PURGE)
    assert read_marker(marker) == "purged"
    assert again["code"] == "approval_required"
    assert again["approval_id"] != approval
    assert [(r.outcome, r.approved_by) for r in reversed(rows)] == [
        ("error", None),
        ("error", None),
        ("ok", "owner"),
        ("error", None),
    ]


async def test_14_an_approval_is_bound_to_its_member(tmp_path: Path) -> None:
    marker = tmp_path / "purged.txt"
    async with desk_gateway(tmp_path, stateless=True) as served:
        await _require_destructive(served)
        mia, max_ = await _member(served), await _member(served, "max")
        async with client(served.base, mia) as c:
            held = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]
        approved = await _rest(
            served, served.owner, "POST", "/api/approvals/approve", {"id": held["approval_id"]}
        )
        assert approved.status_code == 200
        async with client(served.base, max_) as c:
            other = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]
    assert other["code"] == "approval_required"
    assert not marker.exists()


async def test_14_an_answer_naming_another_members_approval_is_declined_and_spends_nothing(
    tmp_path: Path,
) -> None:
    """The answer a 2026-07-28 client sends back names its approval; one that is not this call's
    (another member's) runs nothing, and the other member's approval stays approvable."""
    marker = tmp_path / "purged.txt"
    async with desk_gateway(tmp_path, stateless=True) as served:
        await _require_destructive(served)
        mia, max_ = await _member(served), await _member(served, "max")
        async with client(served.base, mia) as c:
            held = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]["approval_id"]
        async with client(served.base, max_) as c:
            forged = await c.session.call_tool(
                "execute_tool",
                _purge(marker),
                input_responses={"toolcrib_approval": types.ElicitResult(action="accept")},
                request_state=held,
                allow_input_required=True,
            )
        approved = await _rest(served, served.owner, "POST", "/api/approvals/approve", {"id": held})
    assert isinstance(forged, types.CallToolResult)
    assert gateway_payload(forged)["error"]["code"] == "approval_declined"
    assert approved.status_code == 200
    assert not marker.exists()


async def test_14_an_approval_expires_after_its_ttl_approved_or_not(tmp_path: Path) -> None:
    marker, now = tmp_path / "purged.txt", [time.time()]
    async with desk_gateway(
        tmp_path, stateless=True, clock=lambda: now[0], approval_ttl_seconds=60
    ) as served:
        await _require_destructive(served)
        mia = await _member(served)
        async with client(served.base, mia) as c:
            late = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]["approval_id"]
            now[0] += 61
            refused = await _rest(served, served.owner, "POST", "/api/approvals/approve", {"id": late})
            assert refused.status_code == 400
            held = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]["approval_id"]
            approved = await _rest(served, served.owner, "POST", "/api/approvals/approve", {"id": held})
            assert approved.status_code == 200
            now[0] += 61
            stale = gateway_payload(await c.call_tool("execute_tool", _purge(marker)))["error"]
    assert stale["code"] == "approval_required"
    assert not marker.exists()


async def test_14_a_rule_for_another_role_or_risk_holds_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "purged.txt"
    async with desk_gateway(tmp_path, stateless=True) as served, client(served.base, served.owner) as c:
        for rule in ({"risk": "destructive", "role": "guest"}, {"risk": "write"}):
            assert not (await c.call_tool(PREFIX + "approvals__set", rule)).is_error
        result = await c.call_tool("execute_tool", _purge(marker))
    assert not result.is_error
    assert read_marker(marker) == "purged"


@pytest.mark.parametrize("stateless", [True, False])
async def test_14_the_upstreams_question_reaches_a_session_that_can_carry_it(
    tmp_path: Path, stateless: bool
) -> None:
    """A stateful session (with a back-channel) is asked the upstream's own question and its answer
    goes back upstream; a session that cannot carry it gets ``elicitation_unavailable``."""
    asked: list[str] = []
    call = {"tool": "desk__confirm_action", "arguments": {}}
    async with desk_gateway(tmp_path, stateless=stateless) as served:
        answer = _answering("accept", asked)
        async with client(served.base, served.owner, mode="legacy", elicitation_callback=answer) as c:
            result = await c.call_tool("execute_tool", call)
    if stateless:
        assert result.is_error
        assert gateway_payload(result)["error"]["code"] == "elicitation_unavailable"
        assert asked == []
    else:
        assert not result.is_error, result
        assert result.structured_content == {"action": "accept", "content": None}
        assert asked == ["Really do it?"]
