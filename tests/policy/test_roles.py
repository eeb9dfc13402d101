"""R-7.1 roles and permissions; owner versus admin."""

from __future__ import annotations

import pytest

from toolcrib.errors import ConfigError, PermissionRequired
from toolcrib.policy import PERMISSIONS, ROLES, has_permission, require_member_change, role_permissions

SPEC_PERMISSIONS = {
    "tool:execute",
    "connections:read",
    "connections:write",
    "members:read",
    "members:write",
    "restrictions:read",
    "restrictions:write",
    "audit:read",
    "usage:read",
}


def test_r7_1_the_six_roles_exist() -> None:
    assert set(ROLES) == {"owner", "admin", "member", "guest", "auditor", "billing_admin"}


def test_r7_1_every_spec_permission_exists() -> None:
    assert SPEC_PERMISSIONS <= PERMISSIONS


def test_r7_1_owner_holds_every_permission() -> None:
    assert role_permissions("owner") == PERMISSIONS


def test_r7_1_admin_holds_every_spec_permission_but_not_owners_write() -> None:
    assert role_permissions("admin") >= SPEC_PERMISSIONS
    assert not has_permission("admin", "owners:write")


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("member", {"tool:execute", "connections:read"}),
        ("guest", set()),
        ("auditor", {"audit:read", "connections:read", "members:read"}),
        ("billing_admin", {"usage:read"}),
    ],
)
def test_r7_1_lesser_roles_hold_exactly_their_permissions(role: str, expected: set[str]) -> None:
    assert role_permissions(role) == expected


@pytest.mark.parametrize("role", ["guest", "auditor", "billing_admin"])
def test_r7_1_guest_auditor_billing_admin_lack_tool_execute(role: str) -> None:
    assert not has_permission(role, "tool:execute")


def test_r7_1_unknown_role_fails_closed() -> None:
    assert role_permissions("superuser") == frozenset()
    assert not has_permission("superuser", "tool:execute")


def test_admin_cannot_make_someone_owner() -> None:
    with pytest.raises(PermissionRequired) as info:
        require_member_change("admin", target_role="member", new_role="owner", active_owners=1)
    assert info.value.permission == "owners:write"


def test_admin_cannot_demote_or_remove_an_owner() -> None:
    for new_role in ("admin", None):
        with pytest.raises(PermissionRequired) as info:
            require_member_change("admin", target_role="owner", new_role=new_role, active_owners=3)
        assert info.value.permission == "owners:write"


def test_admin_can_change_non_owner_roles() -> None:
    require_member_change("admin", target_role="member", new_role="auditor", active_owners=1)
    require_member_change("admin", target_role="guest", new_role=None, active_owners=1)


def test_owner_can_grant_owner() -> None:
    require_member_change("owner", target_role="admin", new_role="owner", active_owners=1)


def test_member_cannot_change_roles() -> None:
    with pytest.raises(PermissionRequired) as info:
        require_member_change("member", target_role="guest", new_role="member", active_owners=1)
    assert info.value.permission == "members:write"


def test_last_owner_cannot_be_demoted_or_removed() -> None:
    for new_role in ("admin", None):
        with pytest.raises(ConfigError):
            require_member_change("owner", target_role="owner", new_role=new_role, active_owners=1)
    require_member_change("owner", target_role="owner", new_role="admin", active_owners=2)


def test_unknown_new_role_is_refused() -> None:
    with pytest.raises(ConfigError):
        require_member_change("owner", target_role="member", new_role="root", active_owners=1)
