"""Following other processes' changes in the background (R-15.2): the one way they reach this process.

The command line and other replicas change connections, catalogs, policy and search examples in
the database; this process's memory (its index above all) learns of it here, and only here: the
request path reads what is held and never polls the store, so no search waits on the connections
table.

- On PostgreSQL, what another process announces (``store.notify``, LISTEN/NOTIFY) is reloaded at
  once; a slow timer (``SAFETY_NET_SECONDS`` at least) reads the connections table all the same,
  in case an announcement was lost with no reconnection to tell.
- On SQLite there are no announcements: a timer reads the connections table (and the search
  examples' summary, R-5.12, and the versions of upstreams' prompts/resources list changes,
  R-16.3) every ``catalog_poll_seconds``.

``process.open_gateway`` starts it (not for a one-shot command, which has nothing to follow).
"""

from __future__ import annotations

import logging

import anyio

from toolcrib.errors import StoreError
from toolcrib.gateway.connections.catalogs import sync_from_store
from toolcrib.gateway.core import Gateway
from toolcrib.store import notify, offering_changes

__all__ = ["SAFETY_NET_SECONDS", "follow", "on_change", "poll_interval"]

logger = logging.getLogger(__name__)

SAFETY_NET_SECONDS = 60.0
"""The shortest interval of PostgreSQL's timer: announcements carry the changes, this only
catches one that got lost."""
_SHORTEST = 0.05
"""No timer runs faster than this, whatever ``catalog_poll_seconds`` says (0 would spin)."""


def poll_interval(gw: Gateway) -> float:
    """Seconds between two reads of the connections table: ``catalog_poll_seconds`` on SQLite, a
    safety net many times slower on PostgreSQL."""
    every = max(_SHORTEST, gw.settings.catalog_poll_seconds)
    return every if gw.store.db.is_sqlite else max(SAFETY_NET_SECONDS, 30 * every)


async def follow(gw: Gateway) -> None:
    """Forever: the announcements (PostgreSQL) and the timer, until the process closes."""
    async with anyio.create_task_group() as tg:
        if not gw.store.db.is_sqlite:

            async def announced(kind: str) -> None:
                await on_change(gw, kind)

            tg.start_soon(notify.listen, gw.store.db, announced)
        tg.start_soon(_poll, gw, poll_interval(gw))


async def _poll(gw: Gateway, every: float) -> None:
    seen: dict[tuple[str, str], offering_changes.Version] | None = None
    if gw.store.db.is_sqlite:
        try:
            seen = await _offerings_poll(gw, None)  # where things stand: what changes from here is told
        except Exception:
            logger.warning("catalog poll: prompts/resources list changes could not be read", exc_info=True)
    while True:
        await anyio.sleep(every)
        try:
            await sync_from_store(gw)
            if gw.store.db.is_sqlite:  # no announcements on SQLite: examples recorded elsewhere
                await gw.learned.poll()
                seen = await _offerings_poll(gw, seen)
        except Exception:  # nothing may escape a background task (it would end the gateway)
            logger.warning("catalog poll: changes made elsewhere could not be installed", exc_info=True)


async def _offerings_poll(
    gw: Gateway, seen: dict[tuple[str, str], offering_changes.Version] | None
) -> dict[tuple[str, str], offering_changes.Version]:
    """SQLite: the prompts/resources list changes another process's session heard since the last
    poll (R-16.3), told as if this process had heard them; the first poll only learns where
    things stand."""
    now = await offering_changes.versions(gw.store.db)
    if seen is not None and gw.running:
        for (account, kind), (version, instance) in sorted(now.items()):
            before = seen.get((account, kind))
            if before is not None and before[0] == version:
                continue
            if instance != gw.instance.id or (before is not None and version > before[0] + 1):
                await gw.upstreams.offerings_changed_elsewhere(account, kind)
    return now


async def on_change(gw: Gateway, kind: str) -> None:
    """Another process changed ``kind`` (``notify.CATALOG``, ``notify.POLICY``, ``notify.ALL``, a
    tool's search examples, or an upstream's prompts or resources): reload it."""
    try:
        if kind in (notify.POLICY, notify.ALL):
            await gw.policy.reload()
        if kind in (notify.CATALOG, notify.ALL):
            await sync_from_store(gw)
        if kind == notify.ALL:
            await gw.learned.reload()
        elif kind.startswith(notify.EXAMPLES):  # a tool's search examples
            await gw.learned.on_note(kind)
        elif (offerings := notify.noted_offerings(kind)) is not None:  # prompts or resources
            changed, instance, account = offerings
            if instance != gw.instance.id and gw.running:
                await gw.upstreams.offerings_changed_elsewhere(account, changed)
    except StoreError:
        logger.warning("change notification: the database is unavailable", exc_info=True)
