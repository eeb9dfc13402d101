"""Queries on members and their grants (personal access tokens stored hashed, R-7.5).

A grant made from another records it (``parent``, R-7.11): :func:`insert_grant` with a ``parent`` makes one
only while its parent is live, within its scopes and ending no later, with the parent's row locked
so that a revocation racing it on another replica waits for it and then sees (and revokes) the
child; :func:`revoke_lineage` revokes a grant and everything made from it in one transaction.
So the per-call read of the grant's own row answers for its whole chain.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.store.database import Database
from toolcrib.store.tables import grants, members

__all__ = [
    "Bound",
    "GrantRow",
    "MemberRow",
    "ancestors_live",
    "earlier",
    "hash_token",
    "live_parent",
    "revoke_lineage",
]

LINEAGE_DEPTH = 16
"""Deeper than any chain the gateway makes (token → token → session → OAuth grant); a bound on
the walk, never reached."""


def hash_token(token: str) -> str:
    """SHA-256 of a token: tokens are random and long, so a fast hash is the right tool."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class MemberRow:
    name: str
    role: str
    status: str
    created_at: float


@dataclass(frozen=True, slots=True)
class GrantRow:
    id: str
    member: str
    kind: str
    scopes: frozenset[str]
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Bound:
    """What a live parent lets a child have: its scopes or fewer, ending no later than
    ``expires_at``: the parent's own end, or for a sign-in session the end of what signed in
    (its ``children_until``: the session is the consent pages' handle, not the person's proof)."""

    scopes: frozenset[str]
    expires_at: float | None


def earlier(a: float | None, b: float | None) -> float | None:
    """The earlier of two ends, None meaning "never"."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def _member(r: Any) -> MemberRow:
    return MemberRow(name=r.name, role=r.role, status=r.status, created_at=r.created_at)


def _grant(r: Any) -> GrantRow:
    return GrantRow(
        id=r.id,
        member=r.member,
        kind=r.kind,
        scopes=frozenset(r.scopes.split()),
        created_at=r.created_at,
        expires_at=r.expires_at,
        revoked_at=r.revoked_at,
        parent=r.parent,
    )


async def insert_member(db: Database, name: str, role: str) -> MemberRow:
    row = MemberRow(name=name, role=role, status="active", created_at=time.time())
    async with db.begin() as conn:
        await conn.execute(
            insert(members).values(name=name, role=role, status="active", created_at=row.created_at)
        )
    return row


async def get_member(db: Database, name: str) -> MemberRow | None:
    async with db.read() as conn:
        r = (await conn.execute(select(members).where(members.c.name == name))).first()
    return _member(r) if r else None


async def list_members(db: Database) -> list[MemberRow]:
    async with db.read() as conn:
        rows = (await conn.execute(select(members).order_by(members.c.name))).all()
    return [_member(r) for r in rows]


async def update_member(db: Database, name: str, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(update(members).where(members.c.name == name).values(**values))


async def delete_new_member(db: Database, name: str) -> bool:
    """Forget a member who never held a grant (an organization file's apply undoing its own
    creation, #26); a member with grants is kept (their audit and grants name them)."""
    async with db.begin() as conn:
        if (await conn.execute(select(grants.c.id).where(grants.c.member == name).limit(1))).first():
            return False
        result = await conn.execute(delete(members).where(members.c.name == name))
    return bool(result.rowcount)


async def insert_grant(
    db: Database,
    *,
    grant_id: str,
    member: str,
    kind: str,
    token: str | None,
    scopes: frozenset[str],
    expires_at: float | None,
    parent: str | None = None,
    now: float | None = None,
    children_until: float | None = None,
) -> GrantRow | None:
    """A new grant; with ``parent``, a child of it (R-7.11): None when the parent is not live.

    ``children_until`` (a sign-in session's): when what signed in ends (an external issuer's JWT),
    the latest end a grant made through the session may have; with ``parent`` it is the parent's
    end at the latest too. None for a session of the identity provider: no bound but its re-check."""
    now = time.time() if now is None else now
    async with db.begin() as conn:
        if parent is not None:
            bound = await live_parent(conn, parent, now)
            if bound is None or not scopes & bound.scopes:
                return None
            scopes, expires_at = scopes & bound.scopes, earlier(expires_at, bound.expires_at)
            children_until = earlier(children_until, bound.expires_at)
        await conn.execute(
            insert(grants).values(
                id=grant_id,
                member=member,
                kind=kind,
                token_hash=hash_token(token) if token else None,
                scopes=" ".join(sorted(scopes)),
                created_at=now,
                expires_at=expires_at,
                revoked_at=None,
                parent=parent,
                children_until=children_until if kind == "session" else None,
            )
        )
    return GrantRow(grant_id, member, kind, scopes, now, expires_at, None, parent)


async def live_parent(conn: AsyncConnection, parent: str, now: float) -> Bound | None:
    """``parent``'s scopes and end when it is live (unrevoked, unexpired, its member active),
    its row locked until the transaction ends (``FOR UPDATE``; SQLite's writer already holds
    the database): a revocation on another replica waits, then sees the child this makes."""
    r = (
        await conn.execute(
            select(
                grants.c.scopes,
                grants.c.kind,
                grants.c.expires_at,
                grants.c.children_until,
                grants.c.revoked_at,
                members.c.status,
            )
            .join(members, members.c.name == grants.c.member)
            .where(grants.c.id == parent)
            .with_for_update(of=grants)
        )
    ).first()
    if r is None or r.revoked_at is not None or r.status != "active":
        return None
    if r.expires_at is not None and r.expires_at <= now:
        return None
    return Bound(frozenset(r.scopes.split()), _passed_on(r))


def _passed_on(r: Any) -> float | None:
    """The latest end a grant made from row ``r`` may have: its own, or a sign-in session's
    ``children_until`` (the end of what signed in, not the pages' eight hours)."""
    ends: float | None = r.children_until if r.kind == "session" else r.expires_at
    return ends


async def ancestors_live(conn: AsyncConnection, parent: str | None, now: float) -> bool:
    """Every grant up the chain from ``parent`` unrevoked and unexpired (a refresh's check: the
    revocation cascade and the capped ends make it redundant, so a refresh is refused even if
    either ever failed). A sign-in session counts by the end it passes on (``children_until``),
    not by its own eight hours: the pages' cookie ending ends nothing made through it."""
    for _ in range(LINEAGE_DEPTH):
        if parent is None:
            return True
        r = (
            await conn.execute(
                select(
                    grants.c.parent,
                    grants.c.kind,
                    grants.c.expires_at,
                    grants.c.children_until,
                    grants.c.revoked_at,
                ).where(grants.c.id == parent)
            )
        ).first()
        if r is None or r.revoked_at is not None:
            return False
        ends = _passed_on(r)
        if ends is not None and ends <= now:
            return False
        parent = r.parent
    return False


async def revoke_lineage(conn: AsyncConnection, grant_id: str, now: float) -> bool:
    """Revoke ``grant_id`` and every grant made from it, at any depth, in this transaction
    (R-7.11); True when ``grant_id`` itself was live."""
    result = await conn.execute(
        update(grants).where(grants.c.id == grant_id, grants.c.revoked_at.is_(None)).values(revoked_at=now)
    )
    level = [grant_id]
    for _ in range(LINEAGE_DEPTH):
        found = await conn.execute(select(grants.c.id).where(grants.c.parent.in_(level)))
        level = [str(i) for i in found.scalars().all()]
        if not level:
            break
        await conn.execute(
            update(grants).where(grants.c.id.in_(level), grants.c.revoked_at.is_(None)).values(revoked_at=now)
        )
    return bool(result.rowcount)


async def find_grant_by_token(db: Database, token: str) -> tuple[GrantRow, MemberRow] | None:
    """The grant a token belongs to, with its member — read on every call, never cached (R-7.6).

    One indexed read in a read transaction: it does not take SQLite's write turn, so it runs beside
    the audit writes instead of queueing behind them; on SQLite it is one thread hop (#12)."""
    token_hash = hash_token(token)
    if db.is_sqlite:
        r: Any = await db.run_read(lambda conn: conn.execute(_GRANT_BY_HASH, (token_hash,)).fetchone())
        if r is None:
            return None
        grant = GrantRow(r[0], r[1], r[2], frozenset(r[3].split()), r[4], r[5], r[6])
        return grant, MemberRow(name=r[1], role=r[7], status=r[8], created_at=r[9])
    async with db.read() as conn:
        r = (
            await conn.execute(
                select(grants, members.c.role, members.c.status, members.c.created_at.label("m_created"))
                .join(members, members.c.name == grants.c.member)
                .where(grants.c.token_hash == token_hash)
            )
        ).first()
    if r is None:
        return None
    return _grant(r), MemberRow(name=r.member, role=r.role, status=r.status, created_at=r.m_created)


_GRANT_BY_HASH = (
    "SELECT g.id, g.member, g.kind, g.scopes, g.created_at, g.expires_at, g.revoked_at,"
    " m.role, m.status, m.created_at"
    f" FROM {grants.name} g JOIN {members.name} m ON m.name = g.member WHERE g.token_hash = ?"
)


async def get_grant(db: Database, grant_id: str) -> GrantRow | None:
    async with db.read() as conn:
        r = (await conn.execute(select(grants).where(grants.c.id == grant_id))).first()
    return _grant(r) if r else None


async def list_grants(db: Database, member: str | None = None) -> list[GrantRow]:
    query = select(grants).order_by(grants.c.created_at)
    if member:
        query = query.where(grants.c.member == member)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [_grant(r) for r in rows]


async def revoke_grant(db: Database, grant_id: str) -> bool:
    """Revoke a grant and everything made from it (R-7.11); False when it was not live."""
    async with db.begin() as conn:
        return await revoke_lineage(conn, grant_id, time.time())
