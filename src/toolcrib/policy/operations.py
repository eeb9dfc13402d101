"""Which permission each control-plane operation needs (SPEC R-10.1, R-7.1).

The scope comes from the operation's own classification (:func:`classify_operation`); this table
gives the permission. Grants fall under ``members:*`` (a grant is a member's credential) and
frozen parameters under ``connections:write``, listing them too (they are part of a connection's
configuration, and only who may change it reads it);
approval rules and approving a waiting call under ``restrictions:write`` (like a restriction, an
approval decides whether a call may run); reviewing a changed tool (R-13.4) under
``connections:write`` (a tool's accepted definition is part of its connection's configuration);
rate limits under ``restrictions:write`` (like a restriction, they decide whether a call may run;
reading limits: ``restrictions:read``); what searches learned of the tools (R-5.12), read and
cleared, under ``connections:write`` too (what a tool was used for goes with what it is).
Reading one's own stored result and diagnosing a missing tool need ``tool:execute``: they serve
the member who calls tools; so do listing and reading prompts and resources (R-16.2; reading as
another member, ``member``, needs ``restrictions:read`` besides, checked by the gateway
function). Changing an owner also needs ``owners:write``
(:func:`toolcrib.policy.roles.require_member_change`).
"""

from __future__ import annotations

from toolcrib.errors import ConfigError

__all__ = ["OPERATIONS", "SELF_SERVICE", "permission_for", "permission_of"]

OPERATIONS: dict[tuple[str, str], str] = {
    **{("connections", op): "connections:read" for op in ("list", "get")},
    **{("connections", op): "connections:write" for op in ("create", "update", "delete", "refresh")},
    # The connector catalog: finding and adding servers is connection administration
    **{("connectors", op): "connections:write" for op in ("search", "show", "updates", "upgrade")},
    ("members", "list"): "members:read",
    **{("members", op): "members:write" for op in ("invite", "update_role", "suspend", "remove")},
    ("grants", "list"): "members:read",
    **{("grants", op): "members:write" for op in ("create", "revoke")},
    **{("restrictions", op): "restrictions:read" for op in ("list", "explain")},
    **{("restrictions", op): "restrictions:write" for op in ("create", "delete")},
    **{("frozen", op): "connections:write" for op in ("set", "unset", "list")},
    **{("approvals", op): "restrictions:write" for op in ("set", "approve")},
    ("limits", "list"): "restrictions:read",
    **{("limits", op): "restrictions:write" for op in ("set", "remove")},
    ("audit", "search"): "audit:read",
    ("results", "read"): "tool:execute",
    ("tools", "diagnose"): "tool:execute",
    **{("tools", op): "connections:write" for op in ("changes", "accept", "reject")},
    **{("search", op): "connections:write" for op in ("examples", "forget")},
    ("prompts", "list"): "tool:execute",
    **{("resources", op): "tool:execute" for op in ("list", "list_templates", "read")},
}


def permission_for(resource: str, operation: str) -> str:
    """The permission ``{resource}__{operation}`` needs; an unknown operation is a ConfigError."""
    try:
        return OPERATIONS[(resource, operation)]
    except KeyError:
        raise ConfigError(f"unknown control-plane operation {resource}__{operation}") from None


SELF_SERVICE: frozenset[tuple[str, str]] = frozenset({("grants", "list"), ("grants", "revoke")})
"""Operations a member may use on their own grants without the operation's permission (R-7.9):
``tool:execute`` is enough, and the gateway function then reaches only the caller's own grants."""


def permission_of(role_permissions: frozenset[str], resource: str, operation: str) -> str:
    """The permission a caller holding ``role_permissions`` is checked for on this operation: the
    listed one, or ``tool:execute`` for a self-service operation the role lacks it for."""
    listed = permission_for(resource, operation)
    if (resource, operation) in SELF_SERVICE and listed not in role_permissions:
        return "tool:execute"
    return listed
