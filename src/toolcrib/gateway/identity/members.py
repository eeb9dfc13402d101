"""Members and their grants (R-7.1, R-7.5).

Every function takes the principal it acts for and checks it: a member over MCP or REST, or the
command line's :class:`~toolcrib.policy.gates.Operator` (an owner holding every scope). Only
``init_owner`` takes none, as it creates the first principal there is (and refuses once there is
an owner).
"""

from __future__ import annotations

import re
from typing import Any

from toolcrib.auth.tokens import new_grant_id, new_token
from toolcrib.errors import (
    ConfigError,
    InvalidArguments,
    NotFound,
    PermissionRequired,
    ScopeRequired,
    Unauthenticated,
)
from toolcrib.gateway.identity import grants
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Operator, Principal, require_operation
from toolcrib.policy.roles import has_permission, require_member_change, require_role
from toolcrib.policy.scopes import SCOPES, parse_scopes
from toolcrib.store import members as store
from toolcrib.store.members import GrantRow, MemberRow

__all__ = [
    "add_member",
    "create_token",
    "grant_view",
    "init_owner",
    "list_members",
    "list_tokens",
    "member_view",
    "operator_principal",
    "reactivate_member",
    "remove_member",
    "revoke_token",
    "set_role",
    "suspend_member",
]

_MEMBER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,79}$")
DEFAULT_SCOPES = "mcp:tools mcp:read mcp:write"


def member_view(m: MemberRow) -> dict[str, Any]:
    return {"name": m.name, "role": m.role, "status": m.status}


def grant_view(g: GrantRow) -> dict[str, Any]:
    return {
        "id": g.id,
        "member": g.member,
        "kind": g.kind,
        "scopes": sorted(g.scopes),
        "expires_at": g.expires_at,
        "revoked": g.revoked_at is not None,
    }


async def _member(storage: Storage, name: str) -> MemberRow:
    member = await store.get_member(storage.db, name)
    if member is None or member.status == "removed":
        raise NotFound(f"no member named {name!r}")
    return member


async def init_owner(storage: Storage, name: str = "owner") -> tuple[MemberRow, str]:
    """Create the first owner and a token holding every scope; refuses when an owner exists."""
    if any(m.role == "owner" for m in await store.list_members(storage.db)):
        raise ConfigError("this organization already has an owner")
    member = await store.insert_member(storage.db, name, "owner")
    _, token = await _new_token(storage, name, " ".join(sorted(SCOPES)), None, None)
    return member, token


async def add_member(storage: Storage, name: str, role: str, actor: Principal) -> MemberRow:
    require_operation(actor, "members:write", "invite")
    require_member_change(actor.role, target_role=role, new_role=role, active_owners=2)
    require_role(role)
    if not _MEMBER.match(name):
        raise ConfigError(f"member name {name!r} is not valid")
    if await store.get_member(storage.db, name) is not None:
        raise ConfigError(f"a member named {name!r} already exists")
    return await store.insert_member(storage.db, name, role)


async def list_members(storage: Storage, actor: Principal) -> list[MemberRow]:
    require_operation(actor, "members:read", "list")
    return [m for m in await store.list_members(storage.db) if m.status != "removed"]


async def _change(
    storage: Storage, name: str, new_role: str | None, operation: str, actor: Principal
) -> MemberRow:
    require_operation(actor, "members:write", operation)
    target = await _member(storage, name)
    owners = sum(
        1 for m in await store.list_members(storage.db) if m.role == "owner" and m.status == "active"
    )
    require_member_change(actor.role, target_role=target.role, new_role=new_role, active_owners=owners)
    return target


async def set_role(
    storage: Storage, name: str, role: str, principal: Principal, *, pinned: bool = True
) -> None:
    """Change a member's role. It is pinned (R-7.8): the identity provider's groups no longer
    re-map it at sign-in, until an admin sets a role with ``pinned=False``, which hands the role
    back to the groups at the member's next sign-in."""
    require_operation(principal, "members:write", "update_role")
    require_role(role)
    await _change(storage, name, role, "update_role", principal)
    await store.update_member(storage.db, name, role=role, role_pinned=pinned)


async def suspend_member(storage: Storage, name: str, actor: Principal) -> None:
    """Takes effect on the member's next call (R-7.6): grants are checked on every request.

    Every grant of the member is revoked at once, OAuth refresh tokens and sign-in sessions
    included (R-7.9): reactivating the member does not bring them back."""
    await _change(storage, name, None, "suspend", actor)
    await store.update_member(storage.db, name, status="suspended")
    await grants.revoke_all(storage, name)


async def remove_member(storage: Storage, name: str, actor: Principal) -> None:
    await _change(storage, name, None, "remove", actor)
    await store.update_member(storage.db, name, status="removed")
    await grants.revoke_all(storage, name)


async def _new_token(
    storage: Storage, member: str, scopes: str, expires_days: float | None, actor: Principal | None
) -> tuple[GrantRow, str]:
    parsed = parse_scopes(scopes)
    if not parsed:
        raise ConfigError("a token needs at least one scope")
    if expires_days is not None and expires_days <= 0:
        raise ConfigError("--expires must be a positive number of days")
    expires_at = storage.clock() + expires_days * 86400 if expires_days is not None else None
    if actor is not None:  # None only for the first owner's token, made by init_owner
        expires_at = _within_actor_grant(actor, parsed, expires_at)
    token = new_token()
    grant = await store.insert_grant(
        storage.db,
        grant_id=new_grant_id(),
        member=member,
        kind="pat",
        token=token,
        scopes=parsed,
        expires_at=expires_at,
        parent=grants.parent_of(actor) if actor else None,  # revoked with the actor's grant
        now=storage.clock(),
    )
    if grant is None:
        raise Unauthenticated("the grant creating this token has ended")
    return grant, token


def _within_actor_grant(actor: Principal, scopes: frozenset[str], expires_at: float | None) -> float | None:
    """A grant mints only grants within itself: its scopes or fewer, ending no later than it does.

    Without a chosen expiry, the new grant ends with the actor's (when that one ends at all).
    """
    beyond = sorted(scopes - actor.scopes)
    if beyond:
        raise ScopeRequired(
            beyond[0], f"a grant creates grants within its own scopes; it lacks {beyond[0]!r}"
        )
    if actor.expires_at is None:
        return expires_at
    if expires_at is None:
        return actor.expires_at
    if expires_at > actor.expires_at:
        raise InvalidArguments(
            "a grant cannot create a grant that outlives it",
            [{"pointer": "/expires_days", "message": "ends after the grant that creates it"}],
        )
    return expires_at


def _require_owner_reach(actor: Principal, target_role: str) -> None:
    """Only an owner acts on an owner's credentials (``owners:write``, R-7.1)."""
    if target_role == "owner" and not has_permission(actor.role, "owners:write"):
        raise PermissionRequired("owners:write", "only an owner can create or revoke an owner's grants")


async def create_token(
    storage: Storage,
    member: str,
    scopes: str = DEFAULT_SCOPES,
    expires_days: float | None = None,
    *,
    actor: Principal,
) -> tuple[GrantRow, str]:
    """A personal access token; the token is returned once and stored only as a hash.

    The ``actor`` needs ``members:write``, ``owners:write`` for an owner's token, and can only hand
    out scopes and a lifetime its own grant holds (the operator holds every scope and no expiry).
    """
    require_operation(actor, "members:write", "create")
    target = await _member(storage, member)
    _require_owner_reach(actor, target.role)
    if target.status != "active":
        raise ConfigError(f"member {member!r} is {target.status}")
    return await _new_token(storage, member, scopes.replace(",", " "), expires_days, actor)


async def list_tokens(storage: Storage, member: str | None = None, *, actor: Principal) -> list[GrantRow]:
    require_operation(actor, "members:read", "list")
    return await store.list_grants(storage.db, member)


async def revoke_token(storage: Storage, grant_id: str, actor: Principal) -> None:
    """Takes effect on the very next call (R-7.6). An owner's grant is revoked by owners only."""
    require_operation(actor, "members:write", "revoke")
    grant = await store.get_grant(storage.db, grant_id)
    holder = await store.get_member(storage.db, grant.member) if grant is not None else None
    if holder is not None:
        _require_owner_reach(actor, holder.role)
    if not await store.revoke_grant(storage.db, grant_id):
        raise NotFound(f"no active grant {grant_id!r}")


async def operator_principal(storage: Storage, as_member: str | None = None) -> Principal:
    """Who the command line acts as: the :class:`Operator` (the first active owner), or
    ``as_member`` with that member's role (``--as``).

    The operator runs on the gateway's own machine with the database in hand, so it holds every
    scope; the member's role and restrictions still apply through the one pipeline.
    """
    listed = await store.list_members(storage.db)
    if as_member is not None:
        found = next((m for m in listed if m.name == as_member), None)
        if found is None or found.status != "active":
            raise NotFound(f"no active member named {as_member!r}")
        return Principal(member=found.name, role=found.role, scopes=SCOPES, grant_id="cli")
    owner = next((m for m in listed if m.role == "owner" and m.status == "active"), None)
    if owner is None:
        raise ConfigError("no owner yet: run `toolcrib init` first")
    return Operator(member=owner.name, role=owner.role, scopes=SCOPES, grant_id="cli")


async def reactivate_member(storage: Storage, name: str, actor: Principal) -> None:
    """Undo a suspension (the admin console's "reactivate", #13): the member's unrevoked grants work
    again from their next call. Needs ``members:write`` (and ``owners:write`` for an owner)."""
    require_operation(actor, "members:write", "update")
    target = await _member(storage, name)
    require_member_change(actor.role, target_role=target.role, new_role=target.role, active_owners=2)
    if target.status != "suspended":
        raise ConfigError(f"member {name!r} is {target.status}, not suspended")
    await store.update_member(storage.db, name, status="active")
