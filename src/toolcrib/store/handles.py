"""Action handles, stored where every replica can resolve them (R-5.10)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from toolcrib.store.database import Database
from toolcrib.store.learning import SearchRow, insert_search
from toolcrib.store.tables import handles

__all__ = ["HandleRow"]


@dataclass(frozen=True, slots=True)
class HandleRow:
    id: str
    member: str
    public_name: str
    schema_hash: str
    created_at: float
    search_id: str | None = None
    """The search that issued it, kept while it lives when search learns (R-5.12)."""


async def insert_handles(db: Database, rows: Sequence[HandleRow], search: SearchRow | None = None) -> None:
    """Store ``rows``; ``search``, the search that issued them, in the same transaction. The
    ``search_id`` column is written only when a row has one (a handle issued without search
    learning writes the columns every schema since 0002 has)."""
    if not rows:
        return
    learned = any(r.search_id is not None for r in rows)
    async with db.begin() as conn:
        if search is not None:
            await insert_search(conn, search)
        await conn.execute(
            insert(handles),
            [
                {
                    "id": r.id,
                    "member": r.member,
                    "public_name": r.public_name,
                    "schema_hash": r.schema_hash,
                    "created_at": r.created_at,
                    **({"search_id": r.search_id} if learned else {}),
                }
                for r in rows
            ],
        )


async def get_handle(db: Database, handle_id: str) -> HandleRow | None:
    async with db.read() as conn:
        r = (await conn.execute(select(handles).where(handles.c.id == handle_id))).first()
    if r is None:
        return None
    return HandleRow(r.id, r.member, r.public_name, r.schema_hash, r.created_at, r.search_id)


async def purge_handles(db: Database, older_than: float) -> int:
    async with db.begin() as conn:
        result = await conn.execute(delete(handles).where(handles.c.created_at < older_than))
    return int(result.rowcount)
