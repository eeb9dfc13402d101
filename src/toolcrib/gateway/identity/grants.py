"""A member's grants on every face (R-7.9): listed and revoked by their member, and by admins.

A grant is a personal access token (``pat``), an OAuth client's grant (``oauth``: the member's
consent to one client, its access and refresh tokens in ``oauth_tokens``), or a sign-in session of
the ``/auth`` pages (``session``). Anyone may list and revoke their own; ``members:read`` lists
anyone's, ``members:write`` revokes anyone's (``owners:write`` for an owner's). Suspending or
removing a member revokes all of theirs at once (:func:`revoke_all`).

A grant made from another records it as its ``parent`` (R-7.11): a sign-in session made with a
personal token, an OAuth grant made at the consent of a session, a personal token created through
someone's grant. The child holds the parent's scopes or fewer and ends no later than it (capped
when it is made); revoking a grant revokes everything made from it in the same transaction. An
identity provider's sign-in session is a root: nothing of the gateway's made it.
"""

from __future__ import annotations

from typing import Any

from toolcrib.auth.tokens import new_grant_id
from toolcrib.errors import NotFound, PermissionRequired, Unauthenticated
from toolcrib.gateway.storage import Storage
from toolcrib.policy.classify import classify_operation
from toolcrib.policy.gates import Principal, require_operation, require_scope_for
from toolcrib.policy.roles import has_permission
from toolcrib.policy.scopes import SCOPES
from toolcrib.store import members as store
from toolcrib.store.members import GrantRow

__all__ = [
    "SESSION_SECONDS",
    "grant_view",
    "list_grants",
    "new_session_grant",
    "parent_of",
    "revoke_all",
    "revoke_grant",
]

SESSION_SECONDS = 8 * 3600
"""A sign-in session lasts a working day at most, like the console's."""


def grant_view(g: GrantRow, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What every face shows of a grant: never its token, which only its hash ever was."""
    view: dict[str, Any] = {
        "id": g.id,
        "member": g.member,
        "kind": g.kind,
        "scopes": sorted(g.scopes),
        "created_at": g.created_at,
        "expires_at": g.expires_at,
        "revoked": g.revoked_at is not None,
        "parent": g.parent,
    }
    view.update(extra or {})
    return view


async def list_grants(
    storage: Storage, principal: Principal, member: str | None = None
) -> list[dict[str, Any]]:
    """``member``'s grants (all members' with ``members:read``); one's own without it."""
    if has_permission(principal.role, "members:read"):
        require_operation(principal, "members:read", "list")
    else:
        require_scope_for(principal, classify_operation("list"))
        if member not in (None, principal.member):
            raise PermissionRequired("members:read", "only your own grants without members:read")
        member = principal.member
    from toolcrib.store import oauth_server as oauth_store  # the authorization server's rows (#33)

    rows = await store.list_grants(storage.db, member)
    extra = await oauth_store.grant_details(storage.db, [g.id for g in rows])
    return [grant_view(g, extra.get(g.id)) for g in rows]


async def revoke_grant(storage: Storage, principal: Principal, grant_id: str) -> None:
    """Revoke one grant, its tokens and every grant made from it included; takes effect on their
    very next call (R-7.6, R-7.11)."""
    grant = await store.get_grant(storage.db, grant_id)
    if grant is None or grant.member != principal.member:
        require_operation(principal, "members:write", "revoke")
        holder = await store.get_member(storage.db, grant.member) if grant is not None else None
        if (
            holder is not None
            and holder.role == "owner"
            and not has_permission(principal.role, "owners:write")
        ):
            raise PermissionRequired("owners:write", "only an owner can revoke an owner's grants")
    else:
        require_scope_for(principal, classify_operation("revoke"))
    from toolcrib.store import oauth_server as oauth_store

    if grant is None or not await oauth_store.revoke_grant(storage.db, grant_id, storage.clock()):
        raise NotFound(f"no active grant {grant_id!r}")


async def revoke_all(storage: Storage, member: str) -> int:
    """Every grant of ``member``, refresh tokens and sessions included, at once (R-7.9); the
    identity provider's sealed refresh token of theirs is forgotten with them (R-7.11)."""
    from toolcrib.store import idp_vouches
    from toolcrib.store import oauth_server as oauth_store

    revoked = await oauth_store.revoke_member_grants(storage.db, member, storage.clock())
    await idp_vouches.forget_member(storage.db, member)
    return revoked


def parent_of(principal: Principal) -> str | None:
    """The grant row ``principal`` presented, when it is one (not the command line's ``cli``, an
    external issuer's ``jwt:…`` or the playground's): what a grant it makes is made from."""
    if not principal.grant_id.startswith("grt_"):
        return None
    return principal.grant_id


async def new_session_grant(
    storage: Storage,
    member: str,
    scopes: frozenset[str] = SCOPES,
    *,
    parent: str | None = None,
    ends: float | None = None,
) -> str:
    """A sign-in session's token for ``member`` (8 h), for the ``/auth`` pages' cookie.

    The personal-token sign-in and the identity provider's callback both end here: the cookie
    then holds this token, never the personal token or an ID token. ``scopes`` bound what the
    person may consent to in this session: a sign-in with a narrow personal token cannot hand a
    client more than that token holds (the identity provider's sign-in: every scope).

    ``parent`` is the grant that signed in (a personal token, :func:`parent_of`): the session is
    its child (R-7.11), within its scopes, ending no later, and revoked with it; Unauthenticated
    when that grant ended meanwhile. ``ends``: when what signed in ends (an external issuer's JWT).
    """
    from toolcrib.auth.tokens import new_token

    found = await store.get_member(storage.db, member)
    if found is None or found.status != "active":
        raise NotFound(f"no active member named {member!r}")
    token = "tcs_" + new_token().removeprefix("tcp_")
    now = storage.clock()
    grant = await store.insert_grant(
        storage.db,
        grant_id=new_grant_id(),
        member=member,
        kind="session",
        token=token,
        scopes=scopes,  # the pages act for the person; the grant is no bearer token (identity.py)
        expires_at=store.earlier(now + SESSION_SECONDS, ends),
        parent=parent,
        now=now,
        children_until=ends,
    )
    if grant is None:
        raise Unauthenticated("the grant that signed in has ended")
    return token
