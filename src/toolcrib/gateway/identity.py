"""Who is calling: a bearer grant becomes a Principal, checked on every call, never cached (R-7.6)."""

from __future__ import annotations

from toolcrib.errors import Unauthenticated
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal
from toolcrib.store import members as store

__all__ = ["authenticate"]


async def authenticate(gw: Gateway, token: str | None) -> Principal:
    """The principal behind ``token``: a personal access token, or an OAuth JWT when configured."""
    if not token:
        raise Unauthenticated("a bearer token is required")
    if gw.jwt_verifier is not None:
        from toolcrib.auth.jwt import looks_like_jwt  # PyJWT is loaded only where an issuer is set

        if looks_like_jwt(token):
            return await _from_jwt(gw, token)
    found = await store.find_grant_by_token(gw.db, token)
    if found is None:
        raise Unauthenticated("unknown token")
    grant, member = found
    if grant.revoked_at is not None:
        raise Unauthenticated("this token was revoked")
    if grant.expires_at is not None and grant.expires_at <= gw.clock():
        raise Unauthenticated("this token has expired")
    if member.status != "active":
        raise Unauthenticated(f"member {member.name!r} is {member.status}")
    return Principal(
        member=member.name,
        role=member.role,
        scopes=grant.scopes,
        grant_id=grant.id,
        expires_at=grant.expires_at,
    )


async def _from_jwt(gw: Gateway, token: str) -> Principal:
    from toolcrib.auth.jwt import InvalidToken

    assert gw.jwt_verifier is not None
    try:
        verified = await gw.jwt_verifier.verify(token)
    except InvalidToken as exc:
        raise Unauthenticated(f"invalid access token: {exc.reason}") from exc
    member = await store.get_member(gw.db, verified.subject)
    if member is None or member.status != "active":
        raise Unauthenticated(f"subject {verified.subject!r} is not an active member")
    grant_id = "jwt:" + (verified.token_id or verified.subject)
    return Principal(
        member=member.name,
        role=member.role,
        scopes=verified.scopes,
        grant_id=grant_id[:40],
        expires_at=verified.expires_at,
    )
