"""What flows back from an upstream to the caller during one call: progress, log lines, questions.

An upstream session is shared by every call to its connection, so what it sends is attributed to
one call only when that is certain:

- progress notifications carry the progress token the SDK minted for the call, so they always
  reach the caller who asked (:class:`CallRelay.progress`);
- an elicitation embedded in a 2026-07-28 ``InputRequiredResult`` is answered inside the call
  itself (the SDK asks from the calling task), so it reaches the caller of that call;
- log notifications, and an ``elicitation/create`` request of an older protocol version, carry
  nothing naming the call: they reach the caller only while that call is the one call in flight
  on the session, and are dropped (a question: refused) otherwise — never shown to another member.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, get_args

import mcp_types as types

__all__ = ["LEVELS", "OUTSIDE_CALL", "CallRelay", "current_call"]

LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)
"""The log levels, least severe first (RFC 5424's order, as the protocol declares them)."""

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Log = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
Elicit = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]


@dataclass(frozen=True, slots=True)
class CallRelay:
    """The caller's side of one upstream call; a field left None is not passed on."""

    progress: Progress | None = None
    log: Log | None = None
    log_level: types.LoggingLevel | None = None
    """The level the caller opted in to; the upstream is asked for log lines from it up."""
    elicit: Elicit | None = None

    def wants(self, level: types.LoggingLevel) -> bool:
        """Whether a log line at ``level`` reaches the caller: at or above its level (R-2.6)."""
        if self.log is None or self.log_level is None:
            return False
        return LEVELS.index(level) >= LEVELS.index(self.log_level)

    def meta(self) -> dict[str, Any] | None:
        """The ``_meta`` of the upstream request: the log opt-in of 2026-07-28 (SEP-2577)."""
        if self.log is None or self.log_level is None:
            return None
        return {types.LOG_LEVEL_META_KEY: self.log_level}


OUTSIDE_CALL: Any = object()
"""What :data:`current_call` holds outside any call (the session's own receive loop)."""

current_call: ContextVar[CallRelay | None] = ContextVar("toolcrib_upstream_call")
"""The relay of the call running in this task (None: a call with nothing to relay)."""
