"""Which permission each control-plane operation needs (SPEC R-10.1, R-7.1).

The scope comes from the operation's own classification (:func:`classify_operation`); this table
gives the permission. Grants fall under ``members:*`` (a grant is a member's credential) and
frozen parameters under ``connections:write`` (they are part of a connection's configuration);
approval rules, approving a waiting call and rate limits under ``restrictions:write`` (like a
restriction, they decide whether a call may run; reading limits: ``restrictions:read``).
Reading one's own stored result and diagnosing a missing tool need ``tool:execute``: they serve
the member who calls tools. Changing an owner also needs ``owners:write``
(:func:`toolcrib.policy.roles.require_member_change`).
"""

from __future__ import annotations

from toolcrib.errors import ConfigError

__all__ = ["OPERATIONS", "permission_for"]

OPERATIONS: dict[tuple[str, str], str] = {
    **{("connections", op): "connections:read" for op in ("list", "get")},
    **{("connections", op): "connections:write" for op in ("create", "update", "delete", "refresh")},
    ("members", "list"): "members:read",
    **{("members", op): "members:write" for op in ("invite", "update_role", "suspend", "remove")},
    ("grants", "list"): "members:read",
    **{("grants", op): "members:write" for op in ("create", "revoke")},
    **{("restrictions", op): "restrictions:read" for op in ("list", "explain")},
    **{("restrictions", op): "restrictions:write" for op in ("create", "delete")},
    **{("frozen", op): "connections:write" for op in ("set", "unset")},
    **{("approvals", op): "restrictions:write" for op in ("set", "approve")},
    ("limits", "list"): "restrictions:read",
    **{("limits", op): "restrictions:write" for op in ("set", "remove")},
    ("audit", "search"): "audit:read",
    ("results", "read"): "tool:execute",
    ("tools", "diagnose"): "tool:execute",
}


def permission_for(resource: str, operation: str) -> str:
    """The permission ``{resource}__{operation}`` needs; an unknown operation is a ConfigError."""
    try:
        return OPERATIONS[(resource, operation)]
    except KeyError:
        raise ConfigError(f"unknown control-plane operation {resource}__{operation}") from None
