"""Queries of search that learns (R-5.12): the searches that issued handles, and the examples.

A search that issued handles is kept as long as its handles (``searches``, purged with them): who
searched, the query's unit vector, the hash of its text (and the text only when the setting says
so). When a member's call through one of those handles succeeds, the search is copied into
``search_examples`` for the tool it ran: bounded per tool and per member of a tool, the same
member's same text only refreshing its time. Every change to a tool's examples is announced in its
own transaction (``notify.EXAMPLES``), so every process's index learns it (R-15.2).

The bounds are the caller's (the search layer decides them; the store does not import it).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.store.database import Database
from toolcrib.store.notify import announce, examples_note
from toolcrib.store.tables import audit, search_examples, searches

__all__ = [
    "Example",
    "ExampleCount",
    "SearchRow",
    "count_examples",
    "delete_examples",
    "delete_tool_examples",
    "examples_signature",
    "forget_examples",
    "insert_search",
    "load_examples",
    "purge_searches",
    "record_example",
]

_CHUNK = 500  # names per IN (...) list: well under SQLite's bound-parameter limit
_TOOL_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


@dataclass(frozen=True, slots=True)
class SearchRow:
    """A search that issued handles: its vector (float32 little-endian bytes), its text's hash."""

    id: str
    member: str
    vector: bytes | None
    text_sha256: str
    text: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class Example:
    """One stored example as the index reads it: no text, no hash."""

    id: int
    account: str
    public_name: str
    member: str
    vector: bytes
    created_at: float


@dataclass(frozen=True, slots=True)
class ExampleCount:
    """What an admin reads of a tool's examples: how many, from how many members, the newest."""

    public_name: str
    examples: int
    members: int
    newest: float


async def insert_search(conn: AsyncConnection, row: SearchRow) -> None:
    """Write ``row`` in the caller's transaction (the one that stores its handles)."""
    await conn.execute(
        insert(searches).values(
            id=row.id,
            member=row.member,
            vector=row.vector,
            text_sha256=row.text_sha256,
            text=row.text,
            created_at=row.created_at,
        )
    )


async def purge_searches(db: Database, older_than: float) -> int:
    """Searches as old as the handles they issued are gone with them (housekeeping)."""
    async with db.begin() as conn:
        result = await conn.execute(delete(searches).where(searches.c.created_at < older_than))
    return int(result.rowcount)


async def _lock_tool(conn: AsyncConnection, public_name: str) -> None:
    """On PostgreSQL, one writer of a tool's examples at a time (the bounds read, then delete);
    SQLite's write transaction already is one at a time."""
    if conn.dialect.name == "postgresql":
        key = int.from_bytes(
            hashlib.sha256(b"examples:" + public_name.encode()).digest()[:8], "big", signed=True
        )
        await conn.execute(_TOOL_LOCK, {"key": key})


async def record_example(
    db: Database,
    *,
    search_id: str,
    account: str,
    tool: str,
    public_name: str,
    member: str,
    now: float,
    per_tool: int,
    per_member: int,
) -> list[Example] | None:
    """Make the search ``search_id`` an example of ``public_name`` run by ``member``; the tool's
    examples after it, or None when nothing was recorded (the search is gone, or had no vector).

    The same member's same text (by hash) for the same tool refreshes that example's time and
    vector instead of adding one; then the member's oldest beyond ``per_member`` and the tool's
    oldest beyond ``per_tool`` are deleted. On SQLite the whole transaction is one hop to the
    writer's thread (``run_write``): the SQLAlchemy path, a hop per statement, took ~20 ms.
    """
    if db.is_sqlite:
        key = _Recording(search_id, account, tool, public_name, member, now, per_tool, per_member)
        return await db.run_write(key.run)
    async with db.begin() as conn:
        found = (await conn.execute(select(searches).where(searches.c.id == search_id))).first()
        if found is None or found.vector is None:
            return None
        await _lock_tool(conn, public_name)
        mine = (search_examples.c.public_name == public_name) & (search_examples.c.member == member)
        same = (
            await conn.execute(
                select(search_examples.c.id).where(mine, search_examples.c.text_sha256 == found.text_sha256)
            )
        ).first()
        values = {
            "account": account,
            "tool": tool,
            "vector": found.vector,
            "text": found.text,
            "created_at": now,
        }
        if same is not None:
            await conn.execute(
                update(search_examples).where(search_examples.c.id == same.id).values(**values)
            )
        else:
            await conn.execute(
                insert(search_examples).values(
                    public_name=public_name, member=member, text_sha256=found.text_sha256, **values
                )
            )
        await _keep_newest(conn, mine, per_member)
        await _keep_newest(conn, search_examples.c.public_name == public_name, per_tool)
        kept = await _examples_of(conn, [public_name])
        await announce(conn, examples_note(public_name))
    return kept.get(public_name, [])


@dataclass(frozen=True, slots=True)
class _Recording:
    """``record_example`` on SQLite, as plain statements on the writer's own connection."""

    search_id: str
    account: str
    tool: str
    public_name: str
    member: str
    now: float
    per_tool: int
    per_member: int

    def run(self, conn: sqlite3.Connection) -> list[Example] | None:
        found = conn.execute(
            "SELECT vector, text_sha256, text FROM searches WHERE id = ?", (self.search_id,)
        ).fetchone()
        if found is None or found[0] is None:
            return None
        vector, sha, text_ = found
        mine = (self.public_name, self.member)
        same = conn.execute(
            "SELECT id FROM search_examples WHERE public_name = ? AND member = ? AND text_sha256 = ?",
            (*mine, sha),
        ).fetchone()
        values = (self.account, self.tool, vector, text_, self.now)
        if same is not None:
            conn.execute(
                "UPDATE search_examples SET account = ?, tool = ?, vector = ?, text = ?, created_at = ?"
                " WHERE id = ?",
                (*values, same[0]),
            )
        else:
            conn.execute(
                "INSERT INTO search_examples (account, tool, vector, text, created_at, public_name, member,"
                " text_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, *mine, sha),
            )
        conn.execute(
            "DELETE FROM search_examples WHERE id IN (SELECT id FROM search_examples WHERE public_name = ?"
            " AND member = ? ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)",
            (*mine, self.per_member),
        )
        conn.execute(
            "DELETE FROM search_examples WHERE id IN (SELECT id FROM search_examples WHERE public_name = ?"
            " ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)",
            (self.public_name, self.per_tool),
        )
        rows = conn.execute(
            "SELECT id, account, public_name, member, vector, created_at FROM search_examples"
            " WHERE public_name = ? ORDER BY created_at, id",
            (self.public_name,),
        ).fetchall()
        return [Example(r[0], r[1], r[2], r[3], bytes(r[4]), r[5]) for r in rows]


async def _keep_newest(conn: AsyncConnection, where: Any, keep: int) -> None:
    newest_first = search_examples.c.created_at.desc(), search_examples.c.id.desc()
    beyond = (
        await conn.execute(select(search_examples.c.id).where(where).order_by(*newest_first).offset(keep))
    ).all()
    ids = [r.id for r in beyond]
    for i in range(0, len(ids), _CHUNK):
        await conn.execute(delete(search_examples).where(search_examples.c.id.in_(ids[i : i + _CHUNK])))


async def _examples_of(conn: AsyncConnection, names: Collection[str] | None) -> dict[str, list[Example]]:
    columns = (
        search_examples.c.id,
        search_examples.c.account,
        search_examples.c.public_name,
        search_examples.c.member,
        search_examples.c.vector,
        search_examples.c.created_at,
    )
    order = (search_examples.c.public_name, search_examples.c.created_at, search_examples.c.id)
    out: dict[str, list[Example]] = {}
    if names is None:
        rows = list((await conn.execute(select(*columns).order_by(*order))).all())
    else:
        listed = list(names)
        rows = []
        for i in range(0, len(listed), _CHUNK):
            chunk = listed[i : i + _CHUNK]
            query = select(*columns).where(search_examples.c.public_name.in_(chunk)).order_by(*order)
            rows.extend((await conn.execute(query)).all())
    for r in rows:
        out.setdefault(r.public_name, []).append(
            Example(r.id, r.account, r.public_name, r.member, bytes(r.vector), r.created_at)
        )
    return out


async def load_examples(db: Database, names: Collection[str] | None = None) -> dict[str, list[Example]]:
    """The examples of the tools ``names`` (every tool's when None), oldest first, by public name."""
    async with db.read() as conn:
        return await _examples_of(conn, names)


async def examples_signature(db: Database) -> dict[str, tuple[int, int, float]]:
    """Per tool: how many examples, the highest id, the newest time. A process that polls (SQLite)
    compares it with the one it loaded to learn which tools another process changed."""
    query = select(
        search_examples.c.public_name,
        func.count(),
        func.max(search_examples.c.id),
        func.max(search_examples.c.created_at),
    ).group_by(search_examples.c.public_name)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return {str(r[0]): (int(r[1]), int(r[2]), float(r[3])) for r in rows}


async def delete_tool_examples(conn: AsyncConnection, public_names: Collection[str]) -> int:
    """In the caller's transaction: drop the examples of the tools ``public_names`` (their
    definition changed, R-13.4) and announce each one that had some; how many had some."""
    names = sorted(set(public_names))
    dropped: set[str] = set()
    for i in range(0, len(names), _CHUNK):
        where = search_examples.c.public_name.in_(names[i : i + _CHUNK])
        had = (await conn.execute(select(search_examples.c.public_name).where(where).distinct())).all()
        if had:
            dropped.update(str(r.public_name) for r in had)
            await conn.execute(delete(search_examples).where(where))
    for public_name in sorted(dropped):
        await announce(conn, examples_note(public_name))
    return len(dropped)


async def delete_examples(db: Database, public_name: str | None) -> int:
    """Drop one tool's examples (every tool's when None); how many rows went."""
    async with db.begin() as conn:
        return await _delete(conn, public_name)


async def _delete(conn: AsyncConnection, public_name: str | None) -> int:
    query = delete(search_examples)
    if public_name is not None:
        query = query.where(search_examples.c.public_name == public_name)
    result = await conn.execute(query)
    await announce(conn, examples_note(public_name))
    return int(result.rowcount)


async def forget_examples(db: Database, public_name: str | None, audit_row: Mapping[str, Any]) -> int:
    """An admin's clearing: the examples go and the act's audit row is written in one transaction."""
    async with db.begin() as conn:
        deleted = await _delete(conn, public_name)
        await conn.execute(insert(audit).values(**audit_row))
    return deleted


async def count_examples(db: Database, names: Sequence[str] | None = None) -> list[ExampleCount]:
    """Per tool (of ``names`` when given): its examples and distinct members, never vectors or text."""
    query = select(
        search_examples.c.public_name,
        func.count(),
        func.count(func.distinct(search_examples.c.member)),
        func.max(search_examples.c.created_at),
    ).group_by(search_examples.c.public_name)
    if names is not None:
        query = query.where(search_examples.c.public_name.in_(list(names)[:_CHUNK]))
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(search_examples.c.public_name))).all()
    return [ExampleCount(str(r[0]), int(r[1]), int(r[2]), float(r[3])) for r in rows]
