"""Queries on pinned definitions of tools and prompts (R-13.4).

A pin is of a ``kind`` (:data:`PinKind`): ``tool`` or ``prompt``; the kind is part of its key, so
a connection's tool and prompt of the same name never share one.

A sync applies its :class:`~toolcrib.catalog.pins.PinPlan` inside the transaction that writes the
catalog (``connections.replace_catalog``), so a catalog is never live with pins of another one.
Accepting or rejecting a change bumps the connection's catalog version in the same transaction as
the pin and its audit row: every process reloads that catalog (on PostgreSQL at once, through the
announcement), and the decision is never on record without the pin that it changed.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.catalog import pins as rules
from toolcrib.catalog.pins import Pin, PinPlan
from toolcrib.store import outbox
from toolcrib.store.database import Database
from toolcrib.store.learning import delete_tool_examples
from toolcrib.store.notify import CATALOG, announce
from toolcrib.store.tables import audit, connections, tool_pins

__all__ = [
    "Change",
    "PinKind",
    "apply_plan",
    "decide",
    "delete_pins",
    "load_pin",
    "load_pins",
    "waiting_changes",
]

_CHUNK = 500  # names per IN (...) list: well under SQLite's bound-parameter limit
PinKind = Literal["tool", "prompt"]
_FIELDS = ("accepted", "accepted_sha256", "offered", "offered_sha256", "rejected_sha256", "changed_at")


@dataclass(frozen=True, slots=True)
class Change:
    """A held tool or prompt as an admin reviews it: its connection, its pin and its kind."""

    account: str
    pin: Pin
    kind: PinKind = "tool"


def _pin(r: Any) -> Pin:
    m = r._mapping
    return Pin(m["tool"], *(m[f] for f in _FIELDS))


def _values(account: str, pin: Pin, kind: PinKind) -> dict[str, Any]:
    return {"account": account, "kind": kind, "tool": pin.tool, **{f: getattr(pin, f) for f in _FIELDS}}


async def load_pins(conn: AsyncConnection, account: str, kind: PinKind = "tool") -> dict[str, Pin]:
    query = select(tool_pins).where(tool_pins.c.account == account, tool_pins.c.kind == kind)
    return {r.tool: _pin(r) for r in (await conn.execute(query)).all()}


async def load_pin(db: Database, account: str, kind: PinKind, name: str) -> Pin | None:
    """The pin of ``kind`` named ``name`` of ``account``, if any."""
    key = and_(tool_pins.c.account == account, tool_pins.c.kind == kind, tool_pins.c.tool == name)
    async with db.read() as conn:
        found = (await conn.execute(select(tool_pins).where(key))).first()
    return _pin(found) if found is not None else None


async def _drop(conn: AsyncConnection, account: str, tools: Collection[str], kind: PinKind) -> None:
    names = list(tools)
    for i in range(0, len(names), _CHUNK):
        chunk = names[i : i + _CHUNK]
        await conn.execute(
            delete(tool_pins).where(
                tool_pins.c.account == account, tool_pins.c.kind == kind, tool_pins.c.tool.in_(chunk)
            )
        )


async def apply_plan(conn: AsyncConnection, account: str, plan: PinPlan, kind: PinKind = "tool") -> None:
    """Write a sync's pins (replace = delete, then insert: the same on SQLite and PostgreSQL)."""
    await _drop(conn, account, [*plan.drop, *(p.tool for p in plan.write)], kind)
    if plan.write:
        await conn.execute(insert(tool_pins), [_values(account, p, kind) for p in plan.write])


async def sync_pins(
    db: Database,
    account: str,
    kind: PinKind,
    offered: Mapping[str, tuple[dict[str, Any], str]],
    *,
    mode: str,
    now: float,
) -> set[str]:
    """Compare ``offered`` (name -> (definition, digest)) with ``account``'s pins of ``kind``, write
    what changed, and return the names held. Nothing is written when nothing changed (the common
    case: a listing read again); a write takes the connection's row first, as a sync does, and
    plans again with the pins as they are then (another process may have written them since)."""
    async with db.read() as conn:
        first = rules.plan(await load_pins(conn, account, kind), offered, mode=mode, now=now)
    if not first.write and not first.drop:
        return first.held
    async with db.begin() as conn:
        # The connection's row first (FOR UPDATE; SQLite's writers take turns anyway): two
        # processes that read the same change write it in turn.
        await conn.execute(select(connections.c.name).where(connections.c.name == account).with_for_update())
        again = rules.plan(await load_pins(conn, account, kind), offered, mode=mode, now=now)
        await apply_plan(conn, account, again, kind)
    return again.held


async def delete_pins(conn: AsyncConnection, account: str) -> None:
    """A removed connection's pins go with it: one added again under its name starts afresh."""
    await conn.execute(delete(tool_pins).where(tool_pins.c.account == account))


async def waiting_changes(db: Database, account: str | None = None, limit: int = 100) -> list[Change]:
    """Held tools and prompts no admin rejected in their current form, oldest change first."""
    query = (
        select(tool_pins)
        .where(
            tool_pins.c.offered_sha256.is_not(None),
            or_(
                tool_pins.c.rejected_sha256.is_(None),
                tool_pins.c.rejected_sha256 != tool_pins.c.offered_sha256,
            ),
        )
        .order_by(tool_pins.c.changed_at, tool_pins.c.account, tool_pins.c.kind, tool_pins.c.tool)
        .limit(limit)
    )
    if account is not None:
        query = query.where(tool_pins.c.account == account)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [Change(r.account, _pin(r), r.kind) for r in rows]


Verdict = Literal["accept", "reject"]


async def decide(
    db: Database,
    account: str,
    tool: str,
    verdict: Verdict,
    *,
    expected: str | None,
    audit_row: Mapping[str, Any],
    public_name: str | None = None,
    kind: PinKind = "tool",
) -> Pin | None:
    """Accept or reject the held tool's offered definition; the pin as it was, or None when nothing
    is held (or ``expected`` is not the digest offered now: the admin saw another definition).
    Accepting drops the examples searches recorded of ``public_name`` (R-5.12)."""
    async with db.begin() as conn:
        # The connection's row first, as a sync takes it: one waits for the other, never a deadlock.
        # (A call that then finds nothing held leaves a needless version bump: a reload, no harm;
        # the gateway checks the tool is held before it calls this.)
        bumped = await conn.execute(
            update(connections)
            .where(connections.c.name == account)
            .values(catalog_version=connections.c.catalog_version + 1, updated_at=time.time())
        )
        key = and_(tool_pins.c.account == account, tool_pins.c.kind == kind, tool_pins.c.tool == tool)
        found = (await conn.execute(select(tool_pins).where(key))).first()
        pin = _pin(found) if found is not None else None
        if not bumped.rowcount or pin is None or not pin.held:
            return None
        if expected is not None and expected != pin.offered_sha256:
            return None
        if verdict == "accept":
            values = {"accepted": pin.offered, "accepted_sha256": pin.offered_sha256}
            values |= {"offered": None, "offered_sha256": None, "rejected_sha256": None, "changed_at": None}
            if public_name is not None:
                await delete_tool_examples(conn, [public_name])
        else:
            values = {"rejected_sha256": pin.offered_sha256}
        await conn.execute(update(tool_pins).where(key).values(**values))
        written = await conn.execute(insert(audit).values(**audit_row))
        await outbox.add(conn, db, written.inserted_primary_key or ())  # the audit stream
        await announce(conn, CATALOG)
    return pin
