"""Who may reach what: roles, scopes, classification, the one restriction resolver. Pure.

No I/O and no clock except one passed in. The gateway calls the gates in pipeline order
(:mod:`toolcrib.policy.gates`); every reachability question goes through :func:`resolve`.
"""

from toolcrib.policy.cache import DEFAULT_TTL, MAX_TTL, PolicyCache
from toolcrib.policy.classify import classify, classify_operation, name_words
from toolcrib.policy.frozen import frozen_for
from toolcrib.policy.gates import (
    Principal,
    Visibility,
    can_use_operation,
    lists_tools,
    require_allowed,
    require_execute,
    require_not_forbidden,
    require_operation,
    require_scope_for,
    require_tools_scope,
    visibility,
)
from toolcrib.policy.operations import OPERATIONS, permission_for
from toolcrib.policy.restrictions import Decision, explain, resolve
from toolcrib.policy.roles import (
    PERMISSIONS,
    ROLES,
    has_permission,
    require_member_change,
    require_role,
    role_permissions,
)
from toolcrib.policy.rules import Rule, describe_rule, validate_rule
from toolcrib.policy.scopes import RISKS, SCOPES, TOOLS_SCOPE, Risk, parse_scopes, scope_for

__all__ = [
    "DEFAULT_TTL",
    "MAX_TTL",
    "OPERATIONS",
    "PERMISSIONS",
    "RISKS",
    "ROLES",
    "SCOPES",
    "TOOLS_SCOPE",
    "Decision",
    "PolicyCache",
    "Principal",
    "Risk",
    "Rule",
    "Visibility",
    "can_use_operation",
    "classify",
    "classify_operation",
    "describe_rule",
    "explain",
    "frozen_for",
    "has_permission",
    "lists_tools",
    "name_words",
    "parse_scopes",
    "permission_for",
    "require_allowed",
    "require_execute",
    "require_member_change",
    "require_not_forbidden",
    "require_operation",
    "require_role",
    "require_scope_for",
    "require_tools_scope",
    "resolve",
    "role_permissions",
    "scope_for",
    "validate_rule",
    "visibility",
]
