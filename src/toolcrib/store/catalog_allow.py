"""The organization file's allow list of registry entries (R-13.9, ``catalog: {allow: [...]}``),
kept as one fact: a JSON list of server-name patterns."""

from __future__ import annotations

import json

from sqlalchemy import delete, insert, select

from toolcrib.store.database import Database
from toolcrib.store.tables import facts

__all__ = ["read_allow", "write_allow"]

_FACT = "catalog_allow"


async def read_allow(db: Database) -> list[str]:
    async with db.begin() as conn:
        raw = (await conn.execute(select(facts.c.value).where(facts.c.name == _FACT))).scalar_one_or_none()
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return ["\x00"]  # unreadable: allow nothing rather than everything
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else ["\x00"]


async def write_allow(db: Database, patterns: list[str]) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(facts).where(facts.c.name == _FACT))
        if patterns:
            await conn.execute(insert(facts).values(name=_FACT, value=json.dumps(patterns)))
