"""When the identity provider last vouched for a member, and the means to ask it again (R-7.11).

One row per member who signed in through the provider: the provider's refresh token of their
latest sign-in, sealed by the caller with the gateway's key (``None``: the provider gave none),
who they are there (``issuer``, ``subject``), and when the provider last vouched for them. Two
replicas refreshing at once may both use the same provider token; the one that stores a rotated
token does so only over the token it read (a conditional UPDATE), so a rotation is never lost
to a stale write.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import idp_vouches

__all__ = ["Vouch", "forget", "forget_member", "get_vouch", "put_sign_in", "vouched"]


@dataclass(frozen=True, slots=True)
class Vouch:
    member: str
    issuer: str
    subject: str
    refresh_sealed: str | None
    signed_in_at: float
    vouched_at: float


async def get_vouch(db: Database, member: str) -> Vouch | None:
    async with db.read() as conn:
        r = (await conn.execute(select(idp_vouches).where(idp_vouches.c.member == member))).first()
    if r is None:
        return None
    return Vouch(r.member, r.issuer, r.subject, r.refresh_sealed, r.signed_in_at, r.vouched_at)


async def put_sign_in(
    db: Database, *, member: str, issuer: str, subject: str, refresh_sealed: str | None, now: float
) -> None:
    """A sign-in at the provider: it vouched now. Its refresh token replaces the stored one; a
    sign-in that brought none keeps the one stored for the same person (the provider did not
    revoke it by signing them in again)."""
    values = {
        "member": member,
        "issuer": issuer,
        "subject": subject,
        "refresh_sealed": refresh_sealed,
        "signed_in_at": now,
        "vouched_at": now,
    }
    async with db.begin() as conn:
        if refresh_sealed is None:
            found = (await conn.execute(select(idp_vouches).where(idp_vouches.c.member == member))).first()
            if found is not None and (found.issuer, found.subject) == (issuer, subject):
                values["refresh_sealed"] = found.refresh_sealed
        stmt = db.dialect_insert(idp_vouches).values(**values)
        changed = {k: v for k, v in values.items() if k != "member"}
        await conn.execute(stmt.on_conflict_do_update(index_elements=[idp_vouches.c.member], set_=changed))


async def vouched(db: Database, member: str, *, read: str | None, rotated: str | None, now: float) -> None:
    """The provider vouched for ``member`` now, at a refresh with the token ``read`` (sealed, as
    read); ``rotated``: the new token it gave in exchange, stored only over ``read``."""
    async with db.begin() as conn:
        row = idp_vouches.c
        if rotated is not None:
            await conn.execute(
                update(idp_vouches)
                .where(row.member == member, row.refresh_sealed == read)
                .values(refresh_sealed=rotated)
            )
        await conn.execute(
            update(idp_vouches).where(row.member == member, row.vouched_at < now).values(vouched_at=now)
        )


async def forget(db: Database, member: str, read: str) -> bool:
    """The provider refused ``member``'s token ``read`` (sealed, as read): nothing is kept of them,
    unless a sign-in or another refresh stored another token meanwhile (then False)."""
    async with db.begin() as conn:
        gone = await conn.execute(
            delete(idp_vouches).where(idp_vouches.c.member == member, idp_vouches.c.refresh_sealed == read)
        )
    return bool(gone.rowcount)


async def forget_member(db: Database, member: str) -> None:
    """Nothing kept of ``member`` at the provider: suspended or removed, their grants all revoked,
    the provider's refresh token is no use to anyone and is not kept sealed for nothing."""
    async with db.begin() as conn:
        await conn.execute(delete(idp_vouches).where(idp_vouches.c.member == member))
