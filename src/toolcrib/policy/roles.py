"""Roles and the permissions each one holds (SPEC R-7.1).

| role            | permissions                                                   |
|-----------------|---------------------------------------------------------------|
| `owner`         | every permission                                              |
| `admin`         | every permission except `owners:write`                        |
| `member`        | `tool:execute`, `connections:read`                            |
| `auditor`       | `audit:read`, `connections:read`, `members:read`              |
| `billing_admin` | `usage:read`                                                  |
| `guest`         | nothing                                                       |

Decisions:

- There is no separate `grants:read|write`. A grant is a member's credential, so the grant
  operations use `members:read` (list) and `members:write` (create, revoke). That keeps R-7.1's
  table exact for the non-admin roles and lets an auditor see who holds which grant.
- Owner versus admin: `owners:write` is the one permission an admin lacks. It is needed to give
  someone the owner role, and to change the role of, suspend or remove an owner
  (:func:`require_member_change`). The last active owner can never be demoted or removed, so an
  organization cannot lock itself out.
"""

from __future__ import annotations

from toolcrib.errors import ConfigError, PermissionRequired

__all__ = [
    "PERMISSIONS",
    "ROLES",
    "has_permission",
    "require_member_change",
    "require_role",
    "role_permissions",
]

PERMISSIONS: frozenset[str] = frozenset(
    {
        "tool:execute",
        "connections:read",
        "connections:write",
        "members:read",
        "members:write",
        "restrictions:read",
        "restrictions:write",
        "audit:read",
        "usage:read",
        "owners:write",
    }
)

_TABLE: dict[str, frozenset[str]] = {
    "owner": PERMISSIONS,
    "admin": PERMISSIONS - {"owners:write"},
    "member": frozenset({"tool:execute", "connections:read"}),
    "guest": frozenset(),
    "auditor": frozenset({"audit:read", "connections:read", "members:read"}),
    "billing_admin": frozenset({"usage:read"}),
}

ROLES: tuple[str, ...] = ("owner", "admin", "member", "guest", "auditor", "billing_admin")


def require_role(role: str) -> None:
    """Refuse a role name that does not exist (ConfigError)."""
    if role not in _TABLE:
        raise ConfigError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")


def role_permissions(role: str) -> frozenset[str]:
    """The permissions ``role`` holds; an unknown role holds none (it fails closed)."""
    return _TABLE.get(role, frozenset())


def has_permission(role: str, permission: str) -> bool:
    """Whether ``role`` holds ``permission``. Unknown roles and permissions answer False."""
    return permission in role_permissions(role)


def require_member_change(
    actor_role: str, *, target_role: str, new_role: str | None, active_owners: int
) -> None:
    """Check that ``actor_role`` may move a member from ``target_role`` to ``new_role``.

    ``new_role=None`` means suspending or removing the member. Raises PermissionRequired
    (``members:write``, or ``owners:write`` when an owner is involved) and ConfigError for an
    unknown role or for taking away the last active owner.
    """
    if new_role is not None:
        require_role(new_role)
    if not has_permission(actor_role, "members:write"):
        raise PermissionRequired("members:write")
    if "owner" in (target_role, new_role) and not has_permission(actor_role, "owners:write"):
        raise PermissionRequired("owners:write", "only an owner can grant, change or remove the owner role")
    if target_role == "owner" and new_role != "owner" and active_owners <= 1:
        raise ConfigError("the last owner cannot be demoted, suspended or removed")
