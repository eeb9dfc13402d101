"""Queries of toolcrib's own authorization server (R-7.7): clients, codes, tokens, consents.

Every secret is stored as its SHA-256 (codes, access and refresh tokens, client secrets). A grant
is a row of ``grants`` (kind ``oauth``); its tokens live in ``oauth_tokens`` and die with it. The
steps that must not half-happen (a code exchanged into a grant and its tokens, a refresh token
rotated) are one transaction each, and their "only once" is a conditional UPDATE, so two
replicas racing on the same code or refresh token cannot both win (R-15.2).

An OAuth grant is made from the sign-in session that consented (``parent``, R-7.11): at the
exchange it is made only while that session is live, within its scopes and ending with it; every
token it issues ends no later than the grant; revoking anything revokes what was made from it
(:func:`toolcrib.store.members.revoke_lineage`). ``resource`` is where its access tokens are
accepted (RFC 8707): ``/mcp``, or ``/api`` when the person consented to the admin API.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import and_, delete, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.store import outbox
from toolcrib.store.database import Database
from toolcrib.store.members import ancestors_live, earlier, hash_token, live_parent, revoke_lineage
from toolcrib.store.tables import (
    audit,
    grants,
    members,
    oauth_clients,
    oauth_codes,
    oauth_consents,
    oauth_tokens,
    single_use,
)

__all__ = [
    "AccessRow",
    "ClientRow",
    "CodeRow",
    "Exchanged",
    "IssuedTokens",
    "RefreshRow",
    "audit_admin",
    "claim_once",
    "count_registrations",
    "exchange_code",
    "find_access",
    "get_client",
    "get_consent",
    "grant_details",
    "insert_code",
    "load_code",
    "load_refresh",
    "purge",
    "put_client",
    "put_consent",
    "revoke_grant",
    "revoke_member_grants",
    "rotate_refresh",
    "touch_grant",
]


@dataclass(frozen=True, slots=True)
class AccessRow:
    """An access token with its grant and member, as ``authenticate`` needs them (one read)."""

    grant_id: str
    member: str
    scopes: frozenset[str]
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None
    role: str
    status: str
    client_id: str | None
    resource: str | None = None
    """Where the token is accepted (RFC 8707): ``/mcp`` (None: made before #32, so ``/mcp``) or ``/api``."""


@dataclass(frozen=True, slots=True)
class ClientRow:
    client_id: str
    kind: str
    info: dict[str, Any]
    secret_sha256: str | None
    fetched_at: float | None


@dataclass(frozen=True, slots=True)
class CodeRow:
    client_id: str
    member: str
    scopes: frozenset[str]
    code_challenge: str
    redirect_uri: str
    redirect_explicit: bool
    resource: str | None
    expires_at: float
    grant_id: str | None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class RefreshRow:
    grant_id: str
    client_id: str | None
    member: str
    scopes: frozenset[str]
    expires_at: float | None
    used_at: float | None
    revoked_at: float | None
    status: str
    chain_live: bool = True
    """The grant unexpired and every grant it was made from unrevoked and unexpired (R-7.11)."""
    grant_expires_at: float | None = None
    resource: str | None = None


@dataclass(frozen=True, slots=True)
class IssuedTokens:
    """A fresh access and refresh token pair, with when each ends."""

    access: str
    refresh: str
    access_expires_at: float
    refresh_expires_at: float

    def within(self, ends: float | None) -> IssuedTokens:
        """The same tokens, neither outliving ``ends`` (their grant's end, R-7.11)."""
        if ends is None:
            return self
        return replace(
            self,
            access_expires_at=min(self.access_expires_at, ends),
            refresh_expires_at=min(self.refresh_expires_at, ends),
        )


@dataclass(frozen=True, slots=True)
class Exchanged:
    """A code's exchange: the tokens issued (None: nothing was), the scopes they hold, and for a
    replayed code the grant its first exchange made ("" when unknown)."""

    tokens: IssuedTokens | None
    scopes: frozenset[str]
    replayed: str | None = None


# --- the hot path: one indexed read per call ---------------------------------------------------

_ACCESS_SQL = (
    "SELECT g.id, g.member, g.scopes, t.expires_at, g.revoked_at, g.last_used_at, m.role, m.status,"
    " g.client_id, g.resource, g.expires_at"
    f" FROM {oauth_tokens.name} t JOIN {grants.name} g ON g.id = t.grant_id"
    f" JOIN {members.name} m ON m.name = g.member WHERE t.token_sha256 = ? AND t.kind = 'access'"
)


async def find_access(db: Database, token: str) -> AccessRow | None:
    """The access token's grant and member: one indexed read, as a personal token's (#12). Its
    ``expires_at`` is the token's or its grant's, whichever is earlier."""
    digest = hash_token(token)
    if db.is_sqlite:
        r: Any = await db.run_read(lambda conn: conn.execute(_ACCESS_SQL, (digest,)).fetchone())
    else:
        query = (
            select(
                grants.c.id,
                grants.c.member,
                grants.c.scopes,
                oauth_tokens.c.expires_at,
                grants.c.revoked_at,
                grants.c.last_used_at,
                members.c.role,
                members.c.status,
                grants.c.client_id,
                grants.c.resource,
                grants.c.expires_at,
            )
            .select_from(oauth_tokens.join(grants, grants.c.id == oauth_tokens.c.grant_id))
            .join(members, members.c.name == grants.c.member)
            .where(oauth_tokens.c.token_sha256 == digest, oauth_tokens.c.kind == "access")
        )
        async with db.read() as conn:
            r = (await conn.execute(query)).first()
    if r is None:
        return None
    ends = earlier(r[3], r[10])
    return AccessRow(r[0], r[1], frozenset(r[2].split()), ends, r[4], r[5], r[6], r[7], r[8], r[9])


async def touch_grant(db: Database, grant_id: str, now: float, every: float = 60.0) -> None:
    """Note that a grant was used: at most one write per ``every`` seconds, whoever answers."""
    async with db.begin() as conn:
        await conn.execute(
            update(grants)
            .where(
                grants.c.id == grant_id,
                (grants.c.last_used_at.is_(None)) | (grants.c.last_used_at < now - every),
            )
            .values(last_used_at=now)
        )


# --- clients -----------------------------------------------------------------------------------


async def get_client(db: Database, client_id: str) -> ClientRow | None:
    async with db.read() as conn:
        r = (await conn.execute(select(oauth_clients).where(oauth_clients.c.client_id == client_id))).first()
    if r is None:
        return None
    return ClientRow(r.client_id, r.kind, dict(r.info), r.secret_sha256, r.fetched_at)


async def put_client(
    db: Database,
    *,
    client_id: str,
    kind: str,
    info: dict[str, Any],
    secret: str | None,
    registered_from: str | None,
    now: float,
) -> None:
    """Register a client, or (a metadata document fetched again) replace what is cached of it."""
    values = {
        "client_id": client_id,
        "kind": kind,
        "info": info,
        "secret_sha256": hash_token(secret) if secret else None,
        "registered_from": registered_from,
        "created_at": now,
        "fetched_at": now if kind == "cimd" else None,
    }
    async with db.begin() as conn:
        stmt = db.dialect_insert(oauth_clients).values(**values)
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[oauth_clients.c.client_id],
                set_={"info": info, "fetched_at": values["fetched_at"]},
            )
        )


async def count_registrations(db: Database, address: str, since: float) -> int:
    async with db.read() as conn:
        found = await conn.execute(
            select(func.count())
            .select_from(oauth_clients)
            .where(oauth_clients.c.registered_from == address, oauth_clients.c.created_at >= since)
        )
    return int(found.scalar_one())


# --- authorization codes -----------------------------------------------------------------------


async def insert_code(db: Database, code: str, row: CodeRow) -> None:
    async with db.begin() as conn:
        await conn.execute(
            insert(oauth_codes).values(
                code_sha256=hash_token(code),
                client_id=row.client_id,
                member=row.member,
                scopes=" ".join(sorted(row.scopes)),
                code_challenge=row.code_challenge,
                redirect_uri=row.redirect_uri,
                redirect_explicit=row.redirect_explicit,
                resource=row.resource,
                expires_at=row.expires_at,
                grant_id=None,
                parent=row.parent,
            )
        )


async def load_code(db: Database, code: str) -> CodeRow | None:
    async with db.read() as conn:
        r = (
            await conn.execute(select(oauth_codes).where(oauth_codes.c.code_sha256 == hash_token(code)))
        ).first()
    if r is None:
        return None
    return CodeRow(
        r.client_id,
        r.member,
        frozenset(r.scopes.split()),
        r.code_challenge,
        r.redirect_uri,
        bool(r.redirect_explicit),
        r.resource,
        r.expires_at,
        r.grant_id,
        r.parent,
    )


async def _insert_tokens(conn: AsyncConnection, grant_id: str, tokens: IssuedTokens, now: float) -> None:
    await conn.execute(
        insert(oauth_tokens),
        [
            {
                "token_sha256": hash_token(tokens.access),
                "grant_id": grant_id,
                "kind": "access",
                "created_at": now,
                "expires_at": tokens.access_expires_at,
                "used_at": None,
            },
            {
                "token_sha256": hash_token(tokens.refresh),
                "grant_id": grant_id,
                "kind": "refresh",
                "created_at": now,
                "expires_at": tokens.refresh_expires_at,
                "used_at": None,
            },
        ],
    )


async def exchange_code(
    db: Database, code: str, row: CodeRow, grant_id: str, tokens: IssuedTokens, now: float
) -> Exchanged:
    """Turn a code into a grant and its first tokens, once. A code already exchanged is a replay:
    the grant it produced is revoked (RFC 6749 §10.5) and named. A code whose session (``parent``)
    ended since makes nothing (R-7.11); otherwise the grant holds the session's scopes or fewer and
    ends with what the session was signed in with (:func:`live_parent`), and so do its tokens."""
    digest = hash_token(code)
    async with db.begin() as conn:
        claimed = await conn.execute(
            update(oauth_codes)
            .where(oauth_codes.c.code_sha256 == digest, oauth_codes.c.grant_id.is_(None))
            .values(grant_id=grant_id)
        )
        if claimed.rowcount != 1:
            earlier_grant = (
                await conn.execute(select(oauth_codes.c.grant_id).where(oauth_codes.c.code_sha256 == digest))
            ).scalar_one_or_none()
            if earlier_grant:
                await revoke_lineage(conn, earlier_grant, now)
            return Exchanged(None, frozenset(), str(earlier_grant or ""))
        scopes, ends = row.scopes, None
        if row.parent is not None:
            bound = await live_parent(conn, row.parent, now)
            if bound is None or not scopes & bound.scopes:
                return Exchanged(None, frozenset())
            scopes, ends = scopes & bound.scopes, bound.expires_at
        await _insert_grant(conn, grant_id, row, scopes, ends, now)
        issued = tokens.within(ends)
        await _insert_tokens(conn, grant_id, issued, now)
        await conn.execute(
            update(oauth_clients).where(oauth_clients.c.client_id == row.client_id).values(last_used_at=now)
        )
        return Exchanged(issued, scopes)


async def _insert_grant(
    conn: AsyncConnection, grant_id: str, row: CodeRow, scopes: frozenset[str], ends: float | None, now: float
) -> None:
    await conn.execute(
        insert(grants).values(
            id=grant_id,
            member=row.member,
            kind="oauth",
            token_hash=None,
            scopes=" ".join(sorted(scopes)),
            created_at=now,
            expires_at=ends,
            revoked_at=None,
            client_id=row.client_id,
            last_used_at=None,
            parent=row.parent,
            resource=row.resource or "/mcp",
        )
    )


# --- refresh tokens ----------------------------------------------------------------------------


async def load_refresh(db: Database, token: str, now: float) -> RefreshRow | None:
    """The refresh token's grant; ``chain_live`` checks the grant and every grant up its chain."""
    query = (
        select(
            oauth_tokens.c.grant_id,
            grants.c.client_id,
            grants.c.member,
            grants.c.scopes,
            oauth_tokens.c.expires_at,
            oauth_tokens.c.used_at,
            grants.c.revoked_at,
            members.c.status,
            grants.c.expires_at,
            grants.c.parent,
            grants.c.resource,
        )
        .select_from(oauth_tokens.join(grants, grants.c.id == oauth_tokens.c.grant_id))
        .join(members, members.c.name == grants.c.member)
        .where(oauth_tokens.c.token_sha256 == hash_token(token), oauth_tokens.c.kind == "refresh")
    )
    async with db.read() as conn:
        r = (await conn.execute(query)).first()
        if r is None:
            return None
        live = (r[8] is None or r[8] > now) and await ancestors_live(conn, r[9], now)
    ends = earlier(r[4], r[8])
    return RefreshRow(r[0], r[1], r[2], frozenset(r[3].split()), ends, r[5], r[6], r[7], live, r[8], r[10])


async def rotate_refresh(
    db: Database, old: str, grant_id: str, tokens: IssuedTokens, now: float, ends: float | None
) -> IssuedTokens | None:
    """Spend refresh token ``old`` for a new pair ending no later than ``ends`` (the grant's end,
    R-7.11), once; None (and the grant revoked) when it was already spent: a refresh token used
    twice was stolen from one of its two users (R-7.7)."""
    async with db.begin() as conn:
        spent = await conn.execute(
            update(oauth_tokens)
            .where(
                oauth_tokens.c.token_sha256 == hash_token(old),
                oauth_tokens.c.used_at.is_(None),
                oauth_tokens.c.kind == "refresh",
            )
            .values(used_at=now)
        )
        if spent.rowcount != 1:
            await revoke_lineage(conn, grant_id, now)
            return None
        # The access tokens issued before this rotation end with it.
        await conn.execute(
            delete(oauth_tokens).where(oauth_tokens.c.grant_id == grant_id, oauth_tokens.c.kind == "access")
        )
        issued = tokens.within(ends)
        await _insert_tokens(conn, grant_id, issued, now)
    return issued


# --- revocation --------------------------------------------------------------------------------


async def revoke_grant(db: Database, grant_id: str, now: float) -> bool:
    """Revoke a grant: its access and refresh tokens stop at once (they are read through it), and
    so does every grant made from it, theirs included (R-7.11)."""
    async with db.begin() as conn:
        return await revoke_lineage(conn, grant_id, now)


async def revoke_member_grants(db: Database, member: str, now: float) -> int:
    """Every grant of ``member`` at once (suspension or removal, R-7.9); how many were live."""
    async with db.begin() as conn:
        result = await conn.execute(
            update(grants)
            .where(grants.c.member == member, grants.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
    return int(result.rowcount or 0)


async def grant_details(db: Database, grant_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per grant: its client (id and name, for an OAuth grant) and when it was last used."""
    if not grant_ids:
        return {}
    query = (
        select(
            grants.c.id, grants.c.client_id, grants.c.last_used_at, grants.c.resource, oauth_clients.c.info
        )
        .select_from(grants.outerjoin(oauth_clients, oauth_clients.c.client_id == grants.c.client_id))
        .where(grants.c.id.in_(grant_ids))
    )
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    details: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = (r.info or {}).get("client_name") if r.client_id else None
        details[r.id] = {"client_id": r.client_id, "client_name": name, "last_used_at": r.last_used_at}
        if r.client_id:  # an OAuth grant: where its tokens are accepted (RFC 8707)
            details[r.id]["resource"] = r.resource or "/mcp"
    return details


# --- consents and single-use values ------------------------------------------------------------


async def get_consent(db: Database, member: str, client_id: str) -> frozenset[str] | None:
    async with db.read() as conn:
        found = (
            await conn.execute(
                select(oauth_consents.c.scopes).where(
                    oauth_consents.c.member == member, oauth_consents.c.client_id == client_id
                )
            )
        ).scalar_one_or_none()
    return None if found is None else frozenset(str(found).split())


async def put_consent(db: Database, member: str, client_id: str, scopes: frozenset[str], now: float) -> None:
    text = " ".join(sorted(scopes))
    async with db.begin() as conn:
        stmt = db.dialect_insert(oauth_consents).values(
            member=member, client_id=client_id, scopes=text, created_at=now
        )
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[oauth_consents.c.member, oauth_consents.c.client_id],
                set_={"scopes": text, "created_at": now},
            )
        )


async def claim_once(db: Database, value: str, expires_at: float) -> bool:
    """True the first time ``value`` is presented (until it expires), False ever after."""
    async with db.begin() as conn:
        stmt = db.dialect_insert(single_use).values(value_sha256=hash_token(value), expires_at=expires_at)
        claimed = stmt.on_conflict_do_nothing(index_elements=[single_use.c.value_sha256]).returning(
            single_use.c.value_sha256
        )
        return (await conn.execute(claimed)).first() is not None


# --- audit and housekeeping --------------------------------------------------------------------


async def audit_admin(
    db: Database, *, member: str, grant_id: str, operation: str, error_code: str | None, now: float
) -> None:
    """An administrative audit row (``kind='admin'``): a grant refused or revoked for abuse."""
    async with db.begin() as conn:
        written = await conn.execute(
            insert(audit).values(
                started_at=now,
                finished_at=now,
                member=member[:80],
                grant_id=grant_id[:40],
                account="toolcrib",
                connector="oauth",
                operation=operation[:320],
                classification="destructive" if error_code else "write",
                approved=False,
                outcome="error" if error_code else "ok",
                duration_ms=0.0,
                error_code=error_code,
                kind="admin",
            )
        )
        await outbox.add(conn, db, written.inserted_primary_key or ())  # the audit stream


async def purge(db: Database, now: float, unused_clients_before: float) -> None:
    """Forget expired codes, tokens and single-use values, and registered clients never used."""
    async with db.begin() as conn:
        await conn.execute(delete(oauth_codes).where(oauth_codes.c.expires_at < now))
        await conn.execute(delete(oauth_tokens).where(oauth_tokens.c.expires_at < now))
        await conn.execute(delete(single_use).where(single_use.c.expires_at < now))
        used = exists().where(and_(grants.c.client_id == oauth_clients.c.client_id))
        await conn.execute(
            delete(oauth_clients).where(oauth_clients.c.created_at < unused_clients_before, ~used)
        )
