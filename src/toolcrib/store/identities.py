"""Members from the identity provider (R-7.8): found by issuer and subject, or by e-mail.

A member's name is its key everywhere (grants, restrictions, audit), so a person from the
provider is named by their e-mail at first sign-in and keeps that name; ``email``, ``subject`` and
``issuer`` record who they are at the provider, ``source`` says where they came from and
``role_pinned`` whether an admin fixed their role against the provider's groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select, update

from toolcrib.store.database import Database
from toolcrib.store.tables import members

__all__ = ["Identity", "find_identity", "get_identity", "insert_identity", "update_identity"]


@dataclass(frozen=True, slots=True)
class Identity:
    """A member row with what the identity provider said about it."""

    name: str
    role: str
    status: str
    email: str | None
    subject: str | None
    issuer: str | None
    source: str
    role_pinned: bool


def _identity(r: Any) -> Identity:
    return Identity(
        name=r.name,
        role=r.role,
        status=r.status,
        email=r.email,
        subject=r.subject,
        issuer=r.issuer,
        source=r.source,
        role_pinned=bool(r.role_pinned),
    )


async def find_identity(db: Database, *, issuer: str, subject: str, email: str) -> list[Identity]:
    """Members that are this person: the one with their issuer and subject first, then any whose
    name or recorded e-mail is their e-mail (case-insensitively)."""
    by_subject = (members.c.issuer == issuer) & (members.c.subject == subject)
    by_email = or_(func.lower(members.c.name) == email, func.lower(members.c.email) == email)
    async with db.read() as conn:
        rows = (await conn.execute(select(members).where(or_(by_subject, by_email)))).all()
    found = [_identity(r) for r in rows]
    return sorted(found, key=lambda m: (m.issuer != issuer or m.subject != subject, m.name))


async def get_identity(db: Database, name: str) -> Identity | None:
    async with db.read() as conn:
        r = (await conn.execute(select(members).where(members.c.name == name))).first()
    return _identity(r) if r else None


async def insert_identity(
    db: Database, *, name: str, role: str, email: str, subject: str, issuer: str, now: float
) -> bool:
    """Create the member; False when another sign-in (another replica) created it first."""
    insert = db.dialect_insert
    values = {
        "name": name,
        "role": role,
        "status": "active",
        "created_at": now,
        "email": email,
        "subject": subject,
        "issuer": issuer,
        "source": "oidc",
        "role_pinned": False,
    }
    async with db.begin() as conn:
        statement = insert(members).values(**values).on_conflict_do_nothing().returning(members.c.name)
        won = (await conn.execute(statement)).first()
    return won is not None


async def update_identity(db: Database, name: str, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(update(members).where(members.c.name == name).values(**values))
