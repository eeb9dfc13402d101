"""The policy gates of the execution pipeline (SPEC section 6), and who sees what (R-5.1, R-10.1).

The gateway calls them in this order, each raising its in-band error:

    step 2  require_execute(principal)          permission_required  tool:execute
            (the member active and the grant not revoked: checked by the gateway, never cached)
    step 3  require_tools_scope(principal)      scope_required       mcp:tools
    step 6  require_not_forbidden(risk)         forbidden
    step 7  require_allowed(decision, name)     restricted
    step 8  require_scope_for(principal, risk)  scope_required       mcp:read|write|destructive

A forbidden tool answers ``forbidden`` when called by its exact public name (the caller already
holds the name, and step 6 names that code); it is never searchable nor named in ``restricted``.

:func:`visibility` follows the same order, so a tool is ``visible`` in search exactly when an
execution would pass every policy gate, ``restricted`` exactly when it would stop at step 7, and
``hidden`` otherwise.

Control-plane operations over MCP: :func:`lists_tools` (R-7.2: nothing at all is listed without
``tool:execute``), then :func:`require_operation` (its permission, then the scope of its own
classification; ``mcp:tools`` is not needed, they are not connected tools). The REST and command
line faces call :func:`require_operation` alone.

:func:`require` is THE authorization check of every administrative act on every face (MCP, REST,
the console's pages, ``/metrics``, the command line): the role holds the permission, then the
grant holds the scope of the act's classification. There is no "no principal" that skips it: the
command line on the gateway's own host acts as the :class:`Operator`, an owner holding every scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toolcrib.errors import Forbidden, InBandError, PermissionRequired, Restricted, ScopeRequired
from toolcrib.policy.classify import classify_operation
from toolcrib.policy.restrictions import Decision
from toolcrib.policy.roles import has_permission
from toolcrib.policy.scopes import TOOLS_SCOPE, scope_for

__all__ = [
    "EXECUTE",
    "Operator",
    "Principal",
    "Visibility",
    "can_use_operation",
    "lists_tools",
    "permitted",
    "require",
    "require_allowed",
    "require_execute",
    "require_not_forbidden",
    "require_operation",
    "require_scope_for",
    "require_tools_scope",
    "visibility",
]

EXECUTE = "tool:execute"
Visibility = Literal["visible", "restricted", "hidden"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the member, their role, and the grant they presented with its scopes.

    ``expires_at`` is when that grant ends (None: it does not); a grant cannot mint one that
    outlives it.
    """

    member: str
    role: str
    scopes: frozenset[str]
    grant_id: str
    expires_at: float | None = None


@dataclass(frozen=True, slots=True)
class Operator(Principal):
    """The operator at the gateway's own host: the command line, run with the database in hand.

    It acts as an owner member holding every scope, through the same checks as everyone (R-7.1);
    what only the host may do (adding a stdio server, which runs a command on this machine, without
    ``allow_remote_stdio``) is decided by ``isinstance(principal, Operator)``, never by a missing
    principal.
    """


def lists_tools(p: Principal) -> bool:
    """Whether ``tools/list`` shows anything at all, the meta-tools included (R-7.2)."""
    return has_permission(p.role, EXECUTE)


def require_execute(p: Principal) -> None:
    """Step 2: the role holds ``tool:execute`` (gates the whole endpoint, R-7.2)."""
    if not has_permission(p.role, EXECUTE):
        raise PermissionRequired(EXECUTE)


def require_tools_scope(p: Principal) -> None:
    """Step 3: the grant holds ``mcp:tools`` (R-7.3)."""
    if TOOLS_SCOPE not in p.scopes:
        raise ScopeRequired(TOOLS_SCOPE)


def require_not_forbidden(risk: str) -> None:
    """Step 6: the tool is not classified ``forbidden`` (R-7.4)."""
    if risk == "forbidden":
        raise Forbidden("this tool is forbidden by the organization")


def require_allowed(decision: Decision, public_name: str) -> None:
    """Step 7 (and 13): the restriction resolver allows it. The rules are not shown to the model."""
    if not decision.allowed:
        raise Restricted(f"{public_name} is withheld by a restriction")


def require_scope_for(p: Principal, risk: str) -> None:
    """Step 8: the grant holds the scope of the tool's classification (R-7.3)."""
    scope = scope_for(risk)
    if scope not in p.scopes:
        raise ScopeRequired(scope)


def visibility(p: Principal, *, risk: str, decision: Decision) -> Visibility:
    """Where a tool shows in search for ``p`` (R-5.1): as a card, named in ``restricted``, or not at all."""
    try:
        require_execute(p)
        require_tools_scope(p)
        require_not_forbidden(risk)
    except InBandError:
        return "hidden"
    if not decision.allowed:
        return "restricted"
    return "visible" if scope_for(risk) in p.scopes else "hidden"


def require(p: Principal, permission: str | tuple[str, ...], risk: str) -> None:
    """THE authorization check: the role holds ``permission`` (one of them, when several are
    given), then the grant holds the scope of ``risk``, the act's classification (R-7.1, R-7.3).
    ``permission_required`` names the first permission, ``scope_required`` the scope."""
    wanted = (permission,) if isinstance(permission, str) else permission
    if not any(has_permission(p.role, w) for w in wanted):
        raise PermissionRequired(wanted[0], None if len(wanted) == 1 else f"this needs {' or '.join(wanted)}")
    require_scope_for(p, risk)


def permitted(p: Principal, permission: str | tuple[str, ...], risk: str) -> bool:
    """Whether :func:`require` would let ``p`` through (what a face shows, it may use)."""
    try:
        require(p, permission, risk)
    except InBandError:
        return False
    return True


def require_operation(p: Principal, permission: str, operation: str) -> None:
    """A control-plane operation: its permission, then the scope of its classification (R-7.3)."""
    require(p, permission, classify_operation(operation))


def can_use_operation(p: Principal, permission: str, operation: str) -> bool:
    """Whether ``tools/list`` names this control-plane operation for ``p`` (R-10.1, R-7.2)."""
    return lists_tools(p) and permitted(p, permission, classify_operation(operation))
