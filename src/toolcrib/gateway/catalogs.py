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

import anyio

from toolcrib.catalog.records import ExactRecord, canonical_json
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.search.documents import SearchDoc
from toolcrib.store import connections as conn_store
from toolcrib.store.connections import ConnectionRow, StoredTool

__all__ = ["forget_connection", "install_catalog", "reinstall", "sync_from_store", "syncing"]


async def install_catalog(gw: Gateway, row: ConnectionRow, stored: list[StoredTool]) -> None:
    """Make ``stored`` the live catalog of ``row`` (only active connections are searchable)."""
    async with gw.installing:
        usable = {s.record.name: s for s in stored if s.refused is None}
        policy = await gw.policy()
        active = row.status == "active"
        docs, listing = await anyio.to_thread.run_sync(_prepare, gw, row, usable, policy, active)
        vectors = await gw.index.tool_vectors(gw.db, docs) if active else None
        gw.connections[row.name] = row
        old = gw.catalogs.get(row.name, {})
        for gone in old.values():
            gw.listing_bytes.pop(gone.record.public_name, None)
        gw.cards.forget({s.record.public_name for s in old.values()} - set(listing))
        gw.catalogs[row.name] = usable
        gw.listing_bytes.update(listing)
        if active:
            await gw.index.replace(row.name, docs, vectors)
        else:
            await gw.index.remove(row.name)
        await gw.learned.reload_account(row.name, (s.record.public_name for s in usable.values()))


async def reinstall(gw: Gateway, name: str) -> ConnectionRow | None:
    """Install ``name`` as the store holds it now (after this process changed its row or pins);
    the row, or None when the connection is gone."""
    row = await conn_store.get_connection(gw.db, name)
    if row is not None:
        await install_catalog(gw, row, await conn_store.load_catalog(gw.db, name))
    return row


async def forget_connection(gw: Gateway, name: str) -> None:
    """Take a removed connection out of this process: its row, catalog, cards, index and examples
    (after any install under way, which would otherwise bring it back)."""
    async with gw.installing:
        gw.connections.pop(name, None)
        for old in gw.catalogs.pop(name, {}).values():
            gw.listing_bytes.pop(old.record.public_name, None)
            gw.cards.forget([old.record.public_name])
        await gw.index.remove(name)
        await gw.learned.drop_account(name)


@contextmanager
def syncing(gw: Gateway, name: str) -> Iterator[None]:
    """While this process syncs ``name``, ``sync_from_store`` leaves it to that sync, which
    installs what it stores (installing it twice, in either order, could install the older)."""
    gw.syncing_now[name] += 1
    try:
        yield
    finally:
        gw.syncing_now[name] -= 1
        if not gw.syncing_now[name]:
            del gw.syncing_now[name]


async def sync_from_store(gw: Gateway) -> None:
    """Pick up connections another process changed (the CLI, another replica, R-15.2).

    A connection whose catalog version, status, connector or update time differs from what this
    process holds has its catalog reloaded from the store, and one that is gone is forgotten (its
    sessions closed). Called at start and by the follower, never by a request.
    """
    rows = {row.name: row for row in await conn_store.list_connections(gw.db)}
    for name in set(gw.connections) - set(rows):
        await forget_connection(gw, name)
        if gw.running:
            await gw.upstreams.discard(name)
    changed = [row for row in rows.values() if _stale(gw, row)]
    catalogs = {row.name: await conn_store.load_catalog(gw.db, row.name) for row in changed}
    if len(changed) > 1:  # a start, or catching up: every missing vector encoded at once, on every core
        docs = await anyio.to_thread.run_sync(_documents, changed, catalogs)
        await gw.index.tool_vectors(gw.db, docs)
    for row in changed:
        await install_catalog(gw, row, catalogs[row.name])


def _stale(gw: Gateway, row: ConnectionRow) -> bool:
    """Whether the stored ``row`` is newer than what this process holds, and this poll's to
    install: not while this process syncs it (it added it, say), as that sync installs it."""
    held = gw.connections.get(row.name)
    return (held is None or _version(held) != _version(row)) and row.name not in gw.syncing_now


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
        (s.record, gw.risk_of(policy, s), policy.frozen_for(row.name, s.record.name).keys()) for s in shown
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
