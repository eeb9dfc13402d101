"""Upstream OAuth grants and pending authorizations (#14); every value here is sealed by the caller.

A grant is one row per (connection, member): the tokens and the client registration, each a
Fernet token made by ``SecretBox.seal`` (R-13.3), and when the access token stops working. A
pending authorization is one row per ``state``: the callback delivers its answer once, before it
expires, and the flow that waits for it takes it once.

A pending authorization is bound to who started it (R-13.6): the gateway's own start link is kept
as its SHA-256 only and is confirmed once; the browser that confirmed it is kept as the SHA-256 of
the secret in its cookie, and only that browser's callback is delivered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, insert, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import oauth_pending, upstream_tokens

__all__ = ["PendingFlow", "SealedGrant"]


@dataclass(frozen=True, slots=True)
class SealedGrant:
    tokens: str | None
    client: str | None
    expires_at: float | None


def _key(account: str, member: str) -> ColumnElement[bool]:
    return (upstream_tokens.c.account == account) & (upstream_tokens.c.member == member)


async def get_grant(db: Database, account: str, member: str) -> SealedGrant | None:
    async with db.read() as conn:
        row = (await conn.execute(select(upstream_tokens).where(_key(account, member)))).first()
    return SealedGrant(row.tokens, row.client, row.expires_at) if row else None


async def put_grant(db: Database, account: str, member: str, **values: object) -> None:
    """Set ``tokens`` + ``expires_at``, or ``client``, of a grant, creating the row if need be."""
    async with db.begin() as conn:
        where = _key(account, member)
        found = (await conn.execute(select(upstream_tokens.c.account).where(where))).first()
        if found:
            await conn.execute(update(upstream_tokens).where(where).values(updated_at=time.time(), **values))
        else:
            row = {"account": account, "member": member, "updated_at": time.time(), **values}
            await conn.execute(insert(upstream_tokens).values(**row))


async def drop_grant(db: Database, account: str, member: str) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(upstream_tokens).where(_key(account, member)))


@dataclass(frozen=True, slots=True)
class PendingFlow:
    """A pending authorization as the start page and the callback see it (never its answer)."""

    state: str
    account: str
    member: str
    starter: str | None
    authorize_url: str | None  # sealed by the caller
    link_used: bool
    browser_sha256: str | None


async def open_pending(
    db: Database,
    state: str,
    account: str,
    member: str,
    *,
    starter: str,
    link_sha256: str,
    authorize_url: str,
    now: float,
    ttl: float,
) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(oauth_pending).where(oauth_pending.c.expires_at < now))
        await conn.execute(
            insert(oauth_pending).values(
                state=state,
                account=account,
                member=member,
                created_at=now,
                expires_at=now + ttl,
                starter=starter,
                link_sha256=link_sha256,
                link_used=False,
                authorize_url=authorize_url,
            )
        )


def _waiting(now: float) -> ColumnElement[bool]:
    """Not answered yet and not expired: the only pending rows a browser may act on."""
    return oauth_pending.c.answer.is_(None) & (oauth_pending.c.expires_at > now)


async def _pending(db: Database, where: ColumnElement[bool]) -> PendingFlow | None:
    columns = [oauth_pending.c[name] for name in PendingFlow.__dataclass_fields__]
    async with db.read() as conn:
        row = (await conn.execute(select(*columns).where(where))).first()
    return PendingFlow(**row._mapping) if row else None


async def pending_by_link(db: Database, link_sha256: str, *, now: float) -> PendingFlow | None:
    """The live pending authorization whose start link hashes to ``link_sha256``."""
    return await _pending(db, (oauth_pending.c.link_sha256 == link_sha256) & _waiting(now))


async def pending_by_state(db: Database, state: str, *, now: float) -> PendingFlow | None:
    """The live pending authorization of ``state``: not answered, not expired."""
    return await _pending(db, (oauth_pending.c.state == state) & _waiting(now))


async def confirm_link(db: Database, link_sha256: str, browser_sha256: str, *, now: float) -> bool:
    """Mark a start link used by the browser whose secret hashes to ``browser_sha256``: once, in
    one statement, so two browsers confirming at the same moment cannot both win."""
    where = (oauth_pending.c.link_sha256 == link_sha256) & ~oauth_pending.c.link_used & _waiting(now)
    async with db.begin() as conn:
        result = await conn.execute(
            update(oauth_pending).where(where).values(link_used=True, browser_sha256=browser_sha256)
        )
    return result.rowcount == 1


async def deliver(db: Database, state: str, answer: str, *, browser_sha256: str, now: float) -> str | None:
    """Give a pending authorization its answer, once, before it expires, and only from the browser
    that confirmed its start link; the account, or None."""
    async with db.begin() as conn:
        row = (
            await conn.execute(select(oauth_pending.c.account).where(oauth_pending.c.state == state))
        ).first()
        result = await conn.execute(
            update(oauth_pending)
            .where(
                (oauth_pending.c.state == state)
                & (oauth_pending.c.browser_sha256 == browser_sha256)
                & _waiting(now)
            )
            .values(answer=answer)
        )
    return str(row.account) if row and result.rowcount == 1 else None


async def take(db: Database, state: str) -> str | None:
    """The answer of a pending authorization, once: the row is gone after it was taken."""
    async with db.begin() as conn:
        row = (
            await conn.execute(select(oauth_pending.c.answer).where(oauth_pending.c.state == state))
        ).first()
        if row is None or row.answer is None:
            return None
        await conn.execute(delete(oauth_pending).where(oauth_pending.c.state == state))
    return str(row.answer)


async def drop_pending(db: Database, state: str) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(oauth_pending).where(oauth_pending.c.state == state))
