"""What the audit stream's sinks look like from here (R-11.4, #24): the console's audit page and
``/metrics`` read it.

The deliverer itself is ``audit_delivery``: state the gateway holds (``Gateway.audit_stream``) and
runs in the background; this module only reads it and the outbox's backlog for a caller allowed to.
"""

from __future__ import annotations

import time
from typing import Any

from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal, require
from toolcrib.store import outbox

__all__ = ["stream_state"]


async def stream_state(gw: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """Per sink: configured here or not, events waiting, the oldest one's age, this process's
    delivered and failed counts, the last failure's reason; needs ``audit:read`` or ``usage:read``
    (the readers of ``/metrics``)."""
    require(principal, ("usage:read", "audit:read"), "read")  # the console's audit page, /metrics
    stream = gw.audit_stream
    backlog = await outbox.backlog(gw.store.db)
    now = time.time()
    rows = []
    for name in sorted(set(stream.names) | set(backlog)):
        waiting = backlog.get(name)
        state = stream.state.get(name)
        rows.append(
            {
                "sink": name,
                "configured": name in stream.names,
                "pending": waiting.pending if waiting else 0,
                "lag_seconds": max(0.0, now - waiting.oldest_at) if waiting and waiting.oldest_at else 0.0,
                "delivered": stream.delivered[name],
                "failures": stream.failures[name],
                "failing": state.failing if state else 0,
                "last_error": state.last_error if state else None,
            }
        )
    return rows
