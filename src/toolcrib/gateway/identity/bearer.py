"""Who is calling: a bearer grant becomes a Principal, checked on every call, never cached (R-7.6)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcrib.errors import Unauthenticated
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import members as store
from toolcrib.store import oauth_server as oauth_store

if TYPE_CHECKING:
    from toolcrib.auth.jwt import JWTVerifier

__all__ = ["SESSION_KIND", "Bearers"]

SESSION_KIND = "session"
"""A sign-in session's grant (``/auth`` pages): never a bearer token on ``/mcp`` or ``/api``."""
TOUCH_EVERY_SECONDS = 60.0
TOUCHES_HELD = 10_000
"""How many grants' last write of ``last_used_at`` one process remembers (cleared when full)."""


class Bearers:
    """Turns a bearer token into a Principal on every call (R-7.6), over the store it reads grants
    from and the JWT verifier of the configured issuer, if any."""

    def __init__(self, storage: Storage, verifier: JWTVerifier | None) -> None:
        self.storage = storage
        self.verifier = verifier
        self.touched: dict[str, float] = {}
        """Grant id -> when this process last wrote its ``last_used_at``."""

    async def authenticate(
        self, token: str | None, *, session: bool = False, resource: str | None = None
    ) -> Principal:
        return await _authenticate(self, token, session=session, resource=resource)


async def _authenticate(
    bearers: Bearers, token: str | None, *, session: bool = False, resource: str | None = None
) -> Principal:
    """The principal behind ``token``: a personal access token, an access token of toolcrib's own
    authorization server (``tca_``), or an OAuth JWT when an issuer is configured.

    ``session`` asks for a sign-in session's grant instead (the ``/auth`` pages' cookie); a
    session grant is refused everywhere else, and any other grant where a session is asked for.
    ``resource`` is the face asking (``/mcp`` or ``/api``): an access token of toolcrib's own is
    accepted only by the resource it was issued for (RFC 8707, R-7.11), so by no face that names
    none (the console's sign-in, ``/metrics``, the ``/auth`` pages).
    """
    if not token:
        raise Unauthenticated("a bearer token is required")
    if token.startswith("tca_") and not session:
        return await _from_access_token(bearers, token, resource)
    if bearers.verifier is not None:
        from toolcrib.auth.jwt import looks_like_jwt  # PyJWT is loaded only where an issuer is set

        if looks_like_jwt(token):
            return await _from_jwt(bearers, token)
    found = await store.find_grant_by_token(bearers.storage.db, token)
    if found is None:
        raise Unauthenticated("unknown token")
    grant, member = found
    if (grant.kind == SESSION_KIND) != session:
        raise Unauthenticated("a sign-in session is not a bearer token" if not session else "not a session")
    if grant.revoked_at is not None:
        raise Unauthenticated("this token was revoked")
    if grant.expires_at is not None and grant.expires_at <= bearers.storage.clock():
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


async def _from_access_token(bearers: Bearers, token: str, resource: str | None) -> Principal:
    """An access token toolcrib issued: one indexed read (token, grant, member), as a personal
    token costs; the member active, the grant live, the token (and its grant) unexpired, on every
    call (R-7.6); and this face the resource it was issued for (RFC 8707)."""
    row = await oauth_store.find_access(bearers.storage.db, token)
    now = bearers.storage.clock()
    if row is None:
        raise Unauthenticated("unknown token")
    if resource is None or (row.resource or "/mcp") != resource:
        raise Unauthenticated(f"this token was issued for {row.resource or '/mcp'} only")
    if row.revoked_at is not None:
        raise Unauthenticated("this grant was revoked")
    if row.expires_at is not None and row.expires_at <= now:
        raise Unauthenticated("this token has expired")
    if row.status != "active":
        raise Unauthenticated(f"member {row.member!r} is {row.status}")
    await _touch(bearers, row.grant_id, row.last_used_at, now)
    return Principal(
        member=row.member, role=row.role, scopes=row.scopes, grant_id=row.grant_id, expires_at=row.expires_at
    )


async def _touch(bearers: Bearers, grant_id: str, last_used_at: float | None, now: float) -> None:
    """``last_used_at`` written at most once a minute per grant, not once per call."""
    if last_used_at is not None and now - last_used_at < TOUCH_EVERY_SECONDS:
        return
    if now - bearers.touched.get(grant_id, float("-inf")) < TOUCH_EVERY_SECONDS:
        return
    if len(bearers.touched) > TOUCHES_HELD:
        bearers.touched.clear()
    bearers.touched[grant_id] = now
    await oauth_store.touch_grant(bearers.storage.db, grant_id, now, TOUCH_EVERY_SECONDS)


async def _from_jwt(bearers: Bearers, token: str) -> Principal:
    from toolcrib.auth.jwt import InvalidToken

    assert bearers.verifier is not None
    try:
        verified = await bearers.verifier.verify(token)
    except InvalidToken as exc:
        raise Unauthenticated(f"invalid access token: {exc.reason}") from exc
    member = await store.get_member(bearers.storage.db, verified.subject)
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
