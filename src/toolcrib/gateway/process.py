"""One gateway process's life: open the store, load, run the upstream sessions and the background
tasks, and retire on exit.

This is the one module that wires everything together (the upstream supervisor's callbacks to
``upstream_events``, the heartbeat and housekeeping, the audit stream's deliverer, the follower of
other processes' changes), so that ``core`` stays the shared state and imports no use case. The
faces (``toolcrib serve``, each command of the command line) open a gateway here; a command that
only reads the store opens no gateway at all, but the store alone (``reading.open_to_read``). What
only :func:`open_gateway` runs is imported when it runs (#33).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from toolcrib.addresses import AddressPolicy
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.storage import open_store
from toolcrib.settings import Settings
from toolcrib.store.database import Database
from toolcrib.upstream.supervisor import Upstreams

if TYPE_CHECKING:
    from toolcrib.gateway.discovery.meaning import Loader
    from toolcrib.upstream.spec import OAuthBinding, UpstreamSpec

__all__ = ["open_gateway"]


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    *,
    clock: Callable[[], float] = time.time,
    load_encoder: Loader | None = None,
    follow_changes: bool = True,
    addresses: AddressPolicy | None = None,
) -> AsyncIterator[Gateway]:
    """Open the database (migrating it), load catalogs, and run upstream sessions until exit.

    The encoder of the meaning channel is loaded in a worker thread (``load_encoder`` replaces
    the packaged one's loader, which is imported only when meaning is on); when it cannot load,
    search runs on words (R-5.8).
    ``follow_changes`` false: no follower of other processes' changes (a one-shot command has
    nothing to reload, and one cut off at exit mid-query made psycopg warn on stderr).
    ``addresses`` replaces the address policy the settings give (a test's own resolver).
    """
    from toolcrib.gateway import follower, housekeeping
    from toolcrib.gateway.discovery.meaning import load_meaning
    from toolcrib.store import instances as instance_store
    from toolcrib.store import leases as lease_store

    db = Database(settings.database_url, busy_seconds=settings.store_busy_seconds)
    try:
        box = await open_store(db, settings)
        meaning = await load_meaning(settings.semantic, load_encoder)
        gw = Gateway(settings, db, box, clock=clock, meaning=meaning, addresses=addresses)
        await _load(gw)
        async with _supervisor(gw) as upstreams:
            gw.attach(upstreams)
            upstreams.run_in_background(lambda: housekeeping.heartbeat(gw))
            upstreams.run_in_background(lambda: housekeeping.housekeeping(gw))
            if gw.audit_stream.names:
                upstreams.run_in_background(lambda: gw.audit_stream.run(db, gw.addresses, gw.instance.id))
            if follow_changes:
                upstreams.run_in_background(lambda: follower.follow(gw))
            try:
                yield gw
            finally:
                with anyio.CancelScope(shield=True):
                    await lease_store.release(db, housekeeping.LEASE, gw.instance.id)
                    await instance_store.retire(db, gw.instance)
                if gw.bearers.verifier is not None:
                    await gw.bearers.verifier.aclose()
                gw.index.close()
    finally:
        await db.close()


async def _load(gw: Gateway) -> None:
    """Register this process, recover dead calls, purge the expired, and load every catalog."""
    from toolcrib.gateway import housekeeping
    from toolcrib.gateway.connections.catalogs import sync_from_store
    from toolcrib.store import instances as instance_store

    await instance_store.register(gw.store.db, gw.instance, gw.store.clock())
    await housekeeping.recover_orphans(gw.store.db, gw.instance, gw.store.clock(), gw.settings)
    await housekeeping.purge_expired(gw.store.db, gw.store.clock(), gw.settings)
    await sync_from_store(gw)


def _supervisor(gw: Gateway) -> AbstractAsyncContextManager[Upstreams]:
    """The upstream supervisor, its reports answered by ``upstream_events``."""
    settings = gw.settings

    async def on_changed(name: str) -> None:
        from toolcrib.gateway.connections import upstream_events

        await upstream_events.on_tools_changed(gw, name)

    async def on_auth_needed(spec: UpstreamSpec) -> str | None:
        from toolcrib.gateway.connections import upstream_events

        return await upstream_events.on_auth_needed(gw, spec)

    async def on_authorized(binding: OAuthBinding, ok: bool, why: str | None) -> None:
        from toolcrib.gateway.connections import upstream_events

        await upstream_events.on_authorized(gw, binding, ok, why)

    async def on_offerings_heard(name: str, kind: str) -> None:
        from toolcrib.gateway.connections import upstream_events

        await upstream_events.on_offerings_changed(gw, name, kind)

    return Upstreams.running(
        call_timeout=settings.upstream_timeout_seconds,
        connect_timeout=settings.connect_timeout_seconds,
        backoff=settings.restart_backoff_seconds,
        idle_stop=settings.idle_stop_seconds,
        max_message_bytes=settings.max_upstream_message_bytes,
        on_tools_changed=on_changed,
        on_auth_needed=on_auth_needed,
        on_authorized=on_authorized,
        addresses=gw.addresses,
        on_offerings_heard=on_offerings_heard,
    )
