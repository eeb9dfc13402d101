"""The audit stream's deliverer (R-11.4): each process empties the outbox into the sinks.

One task per configured sink, started with the gateway's background tasks. A round claims the
sink's due events in batches (``store.outbox.claim``: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
replicas deliver side by side without taking the same batch), sends each batch, and deletes it once
the sink has it. A batch the sink refused is due again after the sink's back-off, which doubles on
each consecutive failure (``audit_stream_backoff_seconds`` up to ``..._max_seconds``) and resets on
the first success. Nothing is deleted before the sink answered, so a sink that is down, a restart
or a killed process loses nothing; a batch may arrive twice (the process died after sending, before
deleting), and its events carry the same ``id`` each time: at least once, never silently lost.

On SQLite (one host) one process at a time delivers each sink, under a lease in the database (the
table housekeeping's lease lives in); a process that dies leaves it to expire. (A drain outlasting
the lease lets a second process join in: harmless, the claims keep their batches apart.) Counts
(delivered, failures) are this process's, for ``/metrics``; the backlog is read from the store.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio

from toolcrib.addresses import AddressPolicy
from toolcrib.gateway.audit.event import event
from toolcrib.gateway.audit.sinks import Sink, SinkFailed, sink_names, sinks_for
from toolcrib.settings import Settings
from toolcrib.store import leases as lease_store
from toolcrib.store import outbox
from toolcrib.store.database import Database

__all__ = ["AuditStream", "SinkState"]

logger = logging.getLogger(__name__)

_BATCH = 100
"""Events per delivery: one POST, one OTLP request, one write of syslog frames."""
_LEASE = "audit-stream:"


@dataclass(slots=True)
class SinkState:
    """What this process knows of a sink: consecutive failures, the last one's reason, when the
    next attempt is due (wall clock), when it last delivered."""

    failing: int = 0
    last_error: str | None = None
    next_try_at: float = 0.0
    last_delivered_at: float | None = None


class AuditStream:
    """The deliverer of one gateway process, and its counts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.names = sink_names(settings)
        self.delivered: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.state = {name: SinkState() for name in self.names}

    def backoff(self, failing: int) -> float:
        s = self.settings
        return float(
            min(s.audit_stream_backoff_max_seconds, s.audit_stream_backoff_seconds * 2 ** (failing - 1))
        )

    async def run(self, db: Database, addresses: AddressPolicy, instance_id: str) -> None:
        """Deliver until cancelled (the gateway closing); the sinks' connections closed at the end.

        ``addresses`` checks the hosts of the network sinks (R-13.5); ``instance_id`` names this
        process in the lease of a sink on SQLite.
        """
        sinks = sinks_for(self.settings, addresses)
        try:
            async with anyio.create_task_group() as tg:
                for sink in sinks:
                    tg.start_soon(self._drive, db, sink, instance_id)
        finally:
            with anyio.CancelScope(shield=True):
                for sink in sinks:
                    await sink.aclose()
                    if db.is_sqlite:
                        await _quietly(lease_store.release(db, _LEASE + sink.name, instance_id))

    async def _drive(self, db: Database, sink: Sink, instance_id: str) -> None:
        poll = self.settings.audit_stream_poll_seconds
        state = self.state[sink.name]
        while True:
            await anyio.sleep(max(poll, state.next_try_at - time.time()) if state.failing else poll)
            try:
                if await outbox.has_due(db, sink.name) and await self._mine(db, sink, instance_id):
                    await self.deliver(db, sink)
            except Exception:  # nothing may escape a background task (it would end the gateway)
                logger.warning("audit stream: the %s round failed", sink.name, exc_info=True)

    async def _mine(self, db: Database, sink: Sink, instance_id: str) -> bool:
        """Whether this process delivers ``sink`` now: always on PostgreSQL, under a lease on SQLite."""
        if not db.is_sqlite:
            return True
        s = self.settings
        ttl = 3 * (s.audit_stream_poll_seconds + s.audit_sink_timeout_seconds)
        return await lease_store.acquire(db, _LEASE + sink.name, instance_id, now=time.time(), ttl=ttl)

    async def deliver(self, db: Database, sink: Sink) -> int:
        """One round: batches until the sink's due events are out or it fails; how many went."""
        state = self.state[sink.name]
        hold = 3 * self.settings.audit_sink_timeout_seconds
        sent = 0
        while batch := await outbox.claim(db, sink.name, limit=_BATCH, hold_seconds=hold):
            ids = [c.outbox_id for c in batch]
            try:
                await sink.send([event(c.event_id, c.entry) for c in batch])
            except SinkFailed as exc:
                self.failures[sink.name] += 1
                state.failing += 1
                state.last_error = str(exc)
                delay = self.backoff(state.failing)
                state.next_try_at = time.time() + delay
                logger.warning("audit stream: %s failed (%s); retrying in %.1f s", sink.name, exc, delay)
                await outbox.postpone(db, ids, state.next_try_at)
                return sent
            await outbox.delivered(db, ids)
            self.delivered[sink.name] += len(batch)
            sent += len(batch)
            state.failing, state.last_delivered_at = 0, time.time()
        return sent


async def _quietly(work: Any) -> None:
    try:
        await work
    except Exception:  # leaving: a lease not released expires by itself
        logger.debug("audit stream: lease release failed", exc_info=True)
