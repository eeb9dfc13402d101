"""Queries on connections and their catalogs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, insert, select, update

from toolcrib.catalog import pins
from toolcrib.catalog.records import ExactRecord
from toolcrib.store import pins as pin_store
from toolcrib.store.database import Database
from toolcrib.store.learning import delete_tool_examples
from toolcrib.store.notify import CATALOG, announce
from toolcrib.store.tables import connections, offering_changes, tool_pins, tools, upstream_tokens

__all__ = ["ConnectionRow", "StoredTool"]


@dataclass(slots=True)
class ConnectionRow:
    """A configured upstream. ``secrets`` stays sealed here; only the upstream layer opens it."""

    name: str
    connector: str
    transport: str
    command: list[str] | None
    url: str | None
    secrets: str | None
    status: str
    reason: str | None
    tool_count: int
    catalog_version: int
    created_at: float = 0.0
    updated_at: float = 0.0
    auth: str | None = None
    """``oauth`` when the connection authorizes at its upstream with OAuth 2.1 (#14)."""
    authorize_url: str | None = None
    """The start link of an authorization, on a row read for the person who started it (R-13.6):
    never read from the store (the column once held a shareable link; it is only cleared now)."""
    pinning: str = "accept"
    """What a sync does with a tool new to it (R-13.4): ``accept``, ``review``, or ``off`` (no pins)."""
    registry: str | None = None
    """The registry it was added from (its base URL, R-13.9); ``None`` for one defined by hand."""
    registry_name: str | None = None
    registry_version: str | None = None


@dataclass(slots=True)
class StoredTool:
    record: ExactRecord
    card: dict[str, Any] | None
    refused: str | None = None
    held: bool = False
    """Its definition changed since it was accepted (R-13.4): not searchable, not executable."""
    digest: str | None = None
    """The digest of its pinned definition (``catalog.pins``), computed at sync off the event loop."""


def _row(r: Any) -> ConnectionRow:
    return ConnectionRow(
        **{k: r._mapping[k] for k in ConnectionRow.__dataclass_fields__ if k != "authorize_url"}
    )


async def insert_connection(db: Database, row: ConnectionRow) -> None:
    now = time.time()
    row.created_at = row.updated_at = now
    async with db.begin() as conn:
        values = {k: getattr(row, k) for k in ConnectionRow.__dataclass_fields__}
        values["authorize_url"] = None  # a start link is never stored
        await conn.execute(insert(connections).values(**values))
        await announce(conn, CATALOG)


async def get_connection(db: Database, name: str) -> ConnectionRow | None:
    async with db.begin() as conn:
        r = (await conn.execute(select(connections).where(connections.c.name == name))).first()
    return _row(r) if r else None


async def list_connections(db: Database) -> list[ConnectionRow]:
    async with db.begin() as conn:
        rows = (await conn.execute(select(connections).order_by(connections.c.name))).all()
    return [_row(r) for r in rows]


async def set_status(db: Database, name: str, status: str, reason: str | None) -> None:
    async with db.begin() as conn:
        await conn.execute(
            update(connections)
            .where(connections.c.name == name)
            .values(status=status, reason=reason, authorize_url=None, updated_at=time.time())
        )
        await announce(conn, CATALOG)


async def update_connection(db: Database, name: str, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(
            update(connections).where(connections.c.name == name).values(updated_at=time.time(), **values)
        )
        await announce(conn, CATALOG)


async def delete_connection(db: Database, name: str) -> bool:
    async with db.begin() as conn:
        await conn.execute(delete(tools).where(tools.c.account == name))
        await conn.execute(delete(upstream_tokens).where(upstream_tokens.c.account == name))
        await pin_store.delete_pins(conn, name)
        await conn.execute(delete(offering_changes).where(offering_changes.c.account == name))
        result = await conn.execute(delete(connections).where(connections.c.name == name))
        await announce(conn, CATALOG)
    return bool(result.rowcount)


async def replace_catalog(
    db: Database, name: str, stored: Sequence[StoredTool], *, status: str, reason: str | None
) -> int:
    """Swap a connection's whole catalog in one transaction; returns the new catalog version.

    The version is bumped first, in one statement (``version + 1 ... RETURNING``), never read and
    then written: that row stays locked until the commit, so two processes replacing the same
    catalog at once take turns and each gets its own version (R-15.2, #11). The tools' pins are
    compared and written in the same transaction (R-13.4): each of ``stored`` comes back with
    ``held`` set as stored.
    """
    usable = sum(1 for s in stored if s.refused is None)
    async with db.begin() as conn:
        version = (
            await conn.execute(
                update(connections)
                .where(connections.c.name == name)
                .values(
                    catalog_version=connections.c.catalog_version + 1,
                    tool_count=usable,
                    status=status,
                    reason=reason,
                    authorize_url=None,
                    updated_at=time.time(),
                )
                .returning(connections.c.catalog_version, connections.c.pinning)
            )
        ).one()
        await _pin_catalog(conn, name, stored, str(version.pinning))
        await conn.execute(delete(tools).where(tools.c.account == name))
        if stored:
            await conn.execute(insert(tools), [_tool_row(name, s) for s in stored])
        await announce(conn, CATALOG)
    return int(version.catalog_version)


async def _pin_catalog(conn: Any, name: str, stored: Sequence[StoredTool], mode: str) -> None:
    """Compare the offered definitions with the pins and write the plan (R-13.4); the examples of
    a tool whose definition changed are dropped (R-5.12)."""
    offered = {}
    for s in stored:
        if s.refused is None:
            defn = pins.definition(s.record)
            offered[s.record.name] = (defn, s.digest or pins.digest(defn))
    before = await pin_store.load_pins(conn, name)
    plan = pins.plan(before, offered, mode=mode, now=time.time())
    await pin_store.apply_plan(conn, name, plan)
    changed = pins.changed(before, offered)
    if changed:  # what searches learned of a changed tool goes with its old definition
        public = {s.record.name: s.record.public_name for s in stored}
        await delete_tool_examples(conn, [public[tool] for tool in changed])
    for s in stored:
        s.held = s.record.name in plan.held


def _tool_row(name: str, s: StoredTool) -> dict[str, Any]:
    return {
        "account": name,
        "name": s.record.name,
        "record": s.record.to_json(),
        "card": s.card,
        "schema_hash": s.record.schema_hash,
        "refused": s.refused,
    }


async def load_catalog(db: Database, name: str) -> list[StoredTool]:
    """A connection's stored catalog, each tool held or not as its pin says (R-13.4)."""
    pinned = and_(
        tool_pins.c.account == tools.c.account, tool_pins.c.kind == "tool", tool_pins.c.tool == tools.c.name
    )
    query = (
        select(tools, tool_pins.c.offered_sha256)
        .select_from(tools.outerjoin(tool_pins, pinned))
        .where(tools.c.account == name)
    )
    async with db.begin() as conn:
        rows = (await conn.execute(query)).all()
    return [
        StoredTool(
            record=ExactRecord.from_json(dict(r.record)),
            card=r.card,
            refused=r.refused,
            held=r.offered_sha256 is not None and r.refused is None,
        )
        for r in rows
    ]
