"""SPEC section 6 steps 2, 3, 6, 7, 8; R-7.2; R-10.1 control-plane operations; R-9.1 lookup."""

from __future__ import annotations

from typing import Any

import pytest

from toolcrib.errors import ConfigError, Forbidden, PermissionRequired, Restricted, ScopeRequired
from toolcrib.policy import (
    OPERATIONS,
    Decision,
    Principal,
    can_use_operation,
    frozen_for,
    lists_tools,
    permission_for,
    require_allowed,
    require_execute,
    require_not_forbidden,
    require_operation,
    require_scope_for,
    require_tools_scope,
    visibility,
)

ALLOW = Decision(True, (), ())
DENY = Decision(False, ("blocked by rule r1 (role member blocks everything)",), ("r1",))
ALL_SCOPES = frozenset({"mcp:read", "mcp:write", "mcp:destructive", "mcp:tools"})


def principal(role: str = "member", scopes: frozenset[str] = ALL_SCOPES) -> Principal:
    return Principal(member="ann", role=role, scopes=scopes, grant_id="g1")


def test_r7_2_without_tool_execute_every_call_needs_the_permission() -> None:
    with pytest.raises(PermissionRequired) as info:
        require_execute(principal("auditor"))
    assert info.value.code == "permission_required"
    assert info.value.to_payload()["error"]["permission"] == "tool:execute"


def test_r7_2_tools_list_is_empty_without_tool_execute() -> None:
    assert not lists_tools(principal("guest"))
    assert lists_tools(principal("member", frozenset()))


def test_r7_3_reaching_a_connected_tool_needs_mcp_tools() -> None:
    with pytest.raises(ScopeRequired) as info:
        require_tools_scope(principal(scopes=frozenset({"mcp:read"})))
    assert info.value.scope == "mcp:tools"


def test_r7_4_forbidden_tool_answers_forbidden() -> None:
    with pytest.raises(Forbidden):
        require_not_forbidden("forbidden")
    require_not_forbidden("destructive")


def test_r8_5_withheld_tool_cannot_be_called_and_the_rules_are_not_shown() -> None:
    with pytest.raises(Restricted) as info:
        require_allowed(DENY, "notion-legal__delete_page")
    assert "r1" not in info.value.message
    require_allowed(ALLOW, "notion-legal__delete_page")


@pytest.mark.parametrize(
    ("risk", "scope"), [("read", "mcp:read"), ("write", "mcp:write"), ("destructive", "mcp:destructive")]
)
def test_r7_3_execution_needs_the_scope_of_the_classification(risk: str, scope: str) -> None:
    with pytest.raises(ScopeRequired) as info:
        require_scope_for(principal(scopes=ALL_SCOPES - {scope}), risk)
    assert info.value.scope == scope
    require_scope_for(principal(scopes=frozenset({scope})), risk)


def test_r7_3_destructive_scope_does_not_imply_write() -> None:
    with pytest.raises(ScopeRequired):
        require_scope_for(principal(scopes=frozenset({"mcp:tools", "mcp:destructive"})), "write")


def test_r5_1_forbidden_tool_is_hidden_not_named_restricted() -> None:
    assert visibility(principal(), risk="forbidden", decision=DENY) == "hidden"


def test_r5_1_restricted_tool_is_named_in_restricted() -> None:
    assert visibility(principal(), risk="read", decision=DENY) == "restricted"


def test_r5_1_tool_without_the_scope_is_hidden() -> None:
    assert visibility(principal(scopes=frozenset({"mcp:tools"})), risk="read", decision=ALLOW) == "hidden"


# Control-plane operations (R-7.3, R-10.1) ------------------------------------------------------------


def test_r7_3_control_plane_needs_permission_then_scope() -> None:
    with pytest.raises(PermissionRequired) as perm:
        require_operation(principal("member"), "members:write", "invite")
    assert perm.value.permission == "members:write"
    with pytest.raises(ScopeRequired) as scope:
        require_operation(principal("admin", frozenset({"mcp:write"})), "connections:write", "delete")
    assert scope.value.scope == "mcp:destructive"
    require_operation(principal("admin", frozenset({"mcp:read"})), "connections:read", "list")


def test_r7_3_control_plane_does_not_need_mcp_tools() -> None:
    require_operation(principal("owner", frozenset({"mcp:read"})), "audit:read", "search")


def test_r10_1_listing_filters_by_permission_scope_and_tool_execute() -> None:
    admin_read = principal("admin", frozenset({"mcp:read"}))
    assert can_use_operation(admin_read, "connections:read", "list")
    assert not can_use_operation(admin_read, "connections:write", "create")
    assert not can_use_operation(principal("member"), "members:write", "invite")
    # an auditor holds audit:read, but over MCP it sees nothing at all.
    assert not can_use_operation(principal("auditor"), "audit:read", "search")


def test_r10_1_every_operation_has_a_permission() -> None:
    resources = {resource for resource, _ in OPERATIONS}
    assert resources == {
        "connections",
        "connectors",
        "members",
        "grants",
        "restrictions",
        "frozen",
        "audit",
        "results",
        "tools",
        "approvals",
        "limits",
        "search",
        "prompts",
        "resources",
    }
    assert permission_for("members", "update_role") == "members:write"
    assert permission_for("approvals", "approve") == "restrictions:write"
    assert permission_for("grants", "list") == "members:read"
    assert permission_for("restrictions", "explain") == "restrictions:read"
    with pytest.raises(ConfigError):
        permission_for("members", "promote")


def test_r10_1_owner_sees_every_operation_with_all_scopes() -> None:
    owner = principal("owner")
    assert all(can_use_operation(owner, perm, op) for (_, op), perm in OPERATIONS.items())


# lookup ---------------------------------------------------------------------------------------


def test_r9_1_frozen_for_picks_the_rows_of_one_tool() -> None:
    rows: list[dict[str, Any]] = [
        {"account": "notion-legal", "tool": "create_page", "param": "parent_id", "value": "abc"},
        {"account": "notion-legal", "tool": "create_page", "param": "opts", "value": {"x": 1}},
        {"account": "notion-legal", "tool": "delete_page", "param": "parent_id", "value": "zzz"},
        {"account": "notion-marketing", "tool": "create_page", "param": "parent_id", "value": "m"},
    ]
    assert frozen_for(rows, "notion-legal", "create_page") == {"parent_id": "abc", "opts": {"x": 1}}
    assert frozen_for(rows, "github-eng", "create_page") == {}
