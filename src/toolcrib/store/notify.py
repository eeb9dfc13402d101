"""Change notification between gateway processes sharing one database (R-15.2, #11).

A write that changes what the other processes hold in memory — a connection or its catalog, a
restriction, a classification override, a frozen value — announces it inside its own transaction:
on PostgreSQL ``pg_notify`` delivers it to every listening process when, and only if, that
transaction commits. Each gateway process listens on a connection of its own and reloads at once
what changed; polling (catalogs) and the policy cache time (R-7.6) stay the fallback, and are all
there is on SQLite, where ``announce`` does nothing (an upstream's prompts/resources list change
is then a version the others poll, ``offering_changes``).

Grants and member status need no notification: they are read on every call (R-7.6).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from toolcrib.store import offering_changes
from toolcrib.store.database import Database

__all__ = [
    "ALL",
    "CATALOG",
    "CHANNEL",
    "EXAMPLES",
    "OFFERINGS",
    "POLICY",
    "announce",
    "announce_offerings",
    "examples_note",
    "listen",
    "noted_offerings",
    "noted_tool",
]

logger = logging.getLogger(__name__)

CHANNEL = "toolcrib_changes"
CATALOG = "catalog"
POLICY = "policy"
ALL = "all"  # after (re)connecting: anything may have changed while nobody listened
EXAMPLES = "examples"
"""Search examples changed (R-5.12): ``examples:{public_name}`` for one tool, ``examples:`` for all."""

OFFERINGS = "offerings"
"""An upstream's prompts or resources changed (R-16.3): ``offerings:{kind}:{account}:{instance}``,
told by the process whose session heard it (``instance``: it ignores its own)."""
_OFFERING_KINDS = ("prompts", "resources")

_NOTIFY = text("SELECT pg_notify(:channel, :kind)")


async def announce(conn: AsyncConnection, kind: str) -> None:
    """Tell the other processes, when this transaction commits, that ``kind`` changed."""
    if conn.dialect.name == "postgresql":
        await conn.execute(_NOTIFY, {"channel": CHANNEL, "kind": kind})


def examples_note(public_name: str | None) -> str:
    """The announcement that ``public_name``'s examples changed (every tool's when None). A public
    name is at most 320 characters: far within a notification's 8,000 bytes."""
    return f"{EXAMPLES}:{public_name or ''}"


async def announce_offerings(db: Database, instance: str, account: str, kind: str) -> None:
    """Tell the other processes that ``account``'s upstream said its ``kind`` changed: announced on
    PostgreSQL; on SQLite a version the others poll (``offering_changes``)."""
    if kind not in _OFFERING_KINDS:
        return
    if db.is_sqlite:
        await offering_changes.bump(db, account, kind, instance)
        return
    async with db.begin() as conn:
        await announce(conn, f"{OFFERINGS}:{kind}:{account}:{instance}")


def noted_offerings(note: str) -> tuple[str, str, str] | None:
    """``(kind, instance, account)`` of an ``offerings`` announcement; None for any other note."""
    head, _, rest = note.partition(":")
    kind, _, rest = rest.partition(":")
    account, _, instance = rest.partition(":")  # an account name holds no ':' (an instance may)
    if head != OFFERINGS or kind not in _OFFERING_KINDS or not instance or not account:
        return None
    return kind, instance, account


def noted_tool(kind: str) -> str | None:
    """The tool an ``examples`` announcement names; None when it names every tool."""
    return kind.partition(":")[2] or None


async def listen(
    db: Database,
    on_change: Callable[[str], Awaitable[None]],
    *,
    retry_seconds: float = 1.0,
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Forever: call ``on_change(kind)`` for each change another process announces.

    On SQLite it returns at once (the callers poll). A lost connection is opened again after
    ``retry_seconds``, and ``on_change(ALL)`` runs once listening, since changes made while nobody
    listened were not delivered.
    """
    if db.is_sqlite:
        return
    while True:
        try:
            await _listen_once(db, on_change, on_listening)
        except (SQLAlchemyError, OSError) as exc:
            logger.warning(
                "change notifications lost (%s); listening again in %g s", type(exc).__name__, retry_seconds
            )
        except Exception as exc:  # the driver's own errors: the same, the details in the log
            logger.warning("change notifications lost (%s)", type(exc).__name__, exc_info=True)
        await anyio.sleep(retry_seconds)


async def _listen_once(
    db: Database, on_change: Callable[[str], Awaitable[None]], on_listening: Callable[[], None] | None
) -> None:
    conn = await (await db.engine.connect()).execution_options(isolation_level="AUTOCOMMIT")
    try:
        await conn.execute(text(f"LISTEN {CHANNEL}"))
        raw: Any = (await conn.get_raw_connection()).driver_connection  # psycopg's AsyncConnection
        if on_listening is not None:
            on_listening()
        await on_change(ALL)
        async for note in raw.notifies():
            await on_change(str(note.payload))
    finally:
        with anyio.CancelScope(shield=True):
            await conn.invalidate()  # never back to the pool still listening
            await conn.close()
