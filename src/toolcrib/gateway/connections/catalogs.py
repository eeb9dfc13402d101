"""Installing catalogs: what makes a stored catalog live in this process (its index, cards, listing).

Two kinds of caller install a catalog. A use case of this process that changed a connection (added,
synced, refreshed, a pin decided, an authorization ended) installs what it stored at once, so that
its own answer and the next search see it. A change made by another process (the command line,
another replica) reaches this one through the background follower alone (``follower``), which
calls ``sync_from_store``; the request path never reads the connections table.

Everything that costs CPU per tool (search documents, flat-listing sizes, cards, vectors) is
computed in worker threads, the vectors taken from the store's cache where it has them; the event
loop only swaps the results in. This module imports no use case: they import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from toolcrib.catalog.records import ExactRecord, canonical_json
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.store import connections as conn_store
from toolcrib.store.connections import ConnectionRow, StoredTool

if TYPE_CHECKING:  # the search documents are made in a worker thread, by a process that serves (#33)
    from toolcrib.search.documents import SearchDoc

__all__ = ["forget_connection", "install_catalog", "reinstall", "sync_from_store", "syncing"]


async def install_catalog(gw: Gateway, row: ConnectionRow, stored: list[StoredTool]) -> None:
    """Make ``stored`` the live catalog of ``row`` (only active connections are searchable)."""
    async with gw.catalog.installing:
        await _install(gw, row, stored)


async def reinstall(gw: Gateway, name: str) -> ConnectionRow | None:
    """Install ``name`` as the store holds it now; the row, or None when the connection is gone.

    The store is read under the install lock: an install another task made meanwhile (this
    process's own sync, say) is never replaced by an older reading.
    """
    async with gw.catalog.installing:
        row = await conn_store.get_connection(gw.store.db, name)
        if row is not None:
            await _install(gw, row, await conn_store.load_catalog(gw.store.db, name))
        return row


async def forget_connection(gw: Gateway, name: str) -> None:
    """Take a removed connection out of this process: its row, catalog, cards, index and examples
    (after any install under way, which would otherwise bring it back)."""
    async with gw.catalog.installing:
        await _forget(gw, name)


async def _install(gw: Gateway, row: ConnectionRow, stored: list[StoredTool]) -> None:
    usable = {s.record.name: s for s in stored if s.refused is None}
    policy = await gw.policy.current()
    active = row.status == "active"
    docs, listing = await anyio.to_thread.run_sync(_prepare, gw, row, usable, policy, active)
    vectors = await gw.index.tool_vectors(gw.store.db, docs) if active else None
    gw.cards.forget(gw.catalog.install(row, usable, listing))
    if active:
        await gw.index.replace(row.name, docs, vectors)
    else:
        await gw.index.remove(row.name)
    await gw.learned.reload_account(row.name, (s.record.public_name for s in usable.values()))


async def _forget(gw: Gateway, name: str) -> None:
    gw.cards.forget(gw.catalog.forget(name))
    await gw.index.remove(name)
    await gw.learned.drop_account(name)


async def _install_if_current(gw: Gateway, row: ConnectionRow, stored: list[StoredTool]) -> None:
    """Install ``row`` with ``stored`` if the store still holds that version of it (asked under
    the install lock), else what it holds now; nothing while this process syncs it."""
    async with gw.catalog.installing:
        if row.name in gw.catalog.syncing_now:
            return
        now = await conn_store.get_connection(gw.store.db, row.name)
        if now is None:
            return
        if _version(now) != _version(row):
            stored = await conn_store.load_catalog(gw.store.db, row.name)
        await _install(gw, now, stored)


async def _forget_if_gone(gw: Gateway, name: str) -> bool:
    """Forget ``name`` if the store no longer holds it (asked now, under the install lock)."""
    async with gw.catalog.installing:
        if await conn_store.get_connection(gw.store.db, name) is not None:
            return False
        await _forget(gw, name)
        return True


@contextmanager
def syncing(gw: Gateway, name: str) -> Iterator[None]:
    """While this process syncs ``name``, ``sync_from_store`` leaves it to that sync, which
    installs what it stores (installing it twice, in either order, could install the older)."""
    gw.catalog.syncing_now[name] += 1
    try:
        yield
    finally:
        gw.catalog.syncing_now[name] -= 1
        if not gw.catalog.syncing_now[name]:
            del gw.catalog.syncing_now[name]


async def sync_from_store(gw: Gateway) -> None:
    """Pick up connections another process changed (the CLI, another replica, R-15.2).

    A connection whose catalog version, status, connector or update time differs from what this
    process holds has its catalog reloaded from the store, and one that is gone is forgotten (its
    sessions closed). Called at start and by the follower, never by a request.

    The table is read once to find what changed, and each change is installed from a reading
    made under the install lock: while the first read was under way this process may have added
    a connection (then it is not gone) or installed a newer state (then the older one read first
    must not replace it). A connection this process is syncing is that sync's to install.
    """
    rows = {row.name: row for row in await conn_store.list_connections(gw.store.db)}
    for name in set(gw.catalog.connections) - set(rows) - set(gw.catalog.syncing_now):
        if await _forget_if_gone(gw, name) and gw.running:
            await gw.upstreams.discard(name)
    changed = [row for row in rows.values() if _stale(gw, row)]
    catalogs = {row.name: await conn_store.load_catalog(gw.store.db, row.name) for row in changed}
    if len(changed) > 1:  # a start, or catching up: every missing vector encoded at once, on every core
        docs = await anyio.to_thread.run_sync(_documents, changed, catalogs)
        await gw.index.tool_vectors(gw.store.db, docs)
    for row in changed:
        await _install_if_current(gw, row, catalogs[row.name])


def _stale(gw: Gateway, row: ConnectionRow) -> bool:
    """Whether the stored ``row`` is newer than what this process holds, and this poll's to
    install: not while this process syncs it (it added it, say), as that sync installs it."""
    held = gw.catalog.connections.get(row.name)
    return (held is None or _version(held) != _version(row)) and row.name not in gw.catalog.syncing_now


def _prepare(
    gw: Gateway, row: ConnectionRow, usable: dict[str, StoredTool], policy: PolicySnapshot, active: bool
) -> tuple[list[SearchDoc], dict[str, int]]:
    """Search documents, flat-listing sizes and cards of a catalog (worker-thread work).

    A held tool (R-13.4) stays in the catalog, so that executing it answers ``tool_changed``,
    but gets no document, no card and no listing size: nothing shows its offered definition.
    """
    shown = [s for s in usable.values() if not s.held]
    listing = {s.record.public_name: _listing_entry_bytes(s.record) for s in shown}
    if not active:
        return [], listing
    gw.cards.build(
        (s.record, policy.risk_of(s), policy.frozen_for(row.name, s.record.name).keys()) for s in shown
    )
    return _search_docs(row, shown), listing


def _documents(rows: list[ConnectionRow], catalogs: dict[str, list[StoredTool]]) -> list[SearchDoc]:
    """The search documents of the active ones of ``rows`` (worker-thread work)."""
    return [
        doc
        for row in rows
        if row.status == "active"
        for doc in _search_docs(row, (s for s in catalogs[row.name] if s.refused is None and not s.held))
    ]


def _listing_entry_bytes(record: ExactRecord) -> int:
    entry = {
        "name": record.public_name,
        "description": record.description,
        "inputSchema": record.input_schema,
    }
    return len(canonical_json(entry).encode())


def _search_docs(row: ConnectionRow, stored: Iterable[StoredTool]) -> list[SearchDoc]:
    from toolcrib.search.documents import SearchDoc

    return [
        SearchDoc(
            public_name=s.record.public_name,
            account=row.name,
            connector=row.connector,
            name=s.record.name,
            description=str((s.card or {}).get("description") or ""),
        )
        for s in stored
    ]


def _version(row: ConnectionRow) -> tuple[int, str, str, float]:
    return (row.catalog_version, row.status, row.connector, row.updated_at)
