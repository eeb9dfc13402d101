"""The secret frozen values of one call (R-9.2), kept out of everything the call shows anyone.

A secret frozen value reaches the upstream and nothing else: the model never reads it (it is off
the card, and the result, an upstream's error, its progress and log lines and questions are
redacted by its value like the connection's own secrets, R-12.2, R-13.3), an ``invalid_arguments``
answer does not quote it, the audit entry never takes it as the target id (R-11.2), and an
approval shows ``[REDACTED]`` in its place to the member asked and to whoever may approve.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from toolcrib.catalog.records import ExactRecord
from toolcrib.errors import InvalidArguments
from toolcrib.gateway.calls.shaping import REDACTED, redact_text, redact_value
from toolcrib.upstream.relay import CallRelay

__all__ = ["CallSecrets", "redacting_relay"]

_FAILS = "the frozen secret value fails the schema"


@dataclass(frozen=True, slots=True)
class CallSecrets:
    """Which fields of a call carry secret frozen values, and the texts to redact."""

    params: frozenset[str] = frozenset()
    """Provider field names frozen as secret on the called tool."""
    texts: tuple[str, ...] = field(default=())
    """The secret texts of the connection (its tools' secret frozen values)."""

    def shown(self, exact: Mapping[str, Any]) -> dict[str, Any]:
        """The exact arguments as a person may read them: each secret value ``[REDACTED]``."""
        return {k: REDACTED if k in self.params else v for k, v in exact.items()}

    def invalid(self, exc: InvalidArguments, record: ExactRecord) -> InvalidArguments:
        """``exc`` without a secret value in it: an error about a secret field says only that it
        fails the schema, and every other message is redacted by the secret texts."""
        pointers = {"/" + alias for alias, exact in record.aliases.items() if exact in self.params}
        errors = [
            {**error, "message": _FAILS if _under(error.get("pointer", ""), pointers) else self.text(msg)}
            for error in exc.errors
            for msg in [str(error.get("message", ""))]
        ]
        return InvalidArguments(self.text(exc.message), errors, exc.accepted)

    def text(self, text: str) -> str:
        return redact_text(text, self.texts) if self.texts else text


def _under(pointer: str, roots: Collection[str]) -> bool:
    return any(pointer == root or pointer.startswith(root + "/") for root in roots)


def redacting_relay(relay: CallRelay | None, secrets: Sequence[str]) -> CallRelay | None:
    """``relay`` with what the upstream sends during the call (progress messages, log lines,
    questions) redacted like its result, so no secret reaches the caller that way (R-13.3)."""
    if relay is None or not secrets:
        return relay
    progress, log, elicit = relay.progress, relay.log, relay.elicit

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        assert progress is not None
        await progress(value, total, None if message is None else redact_text(message, secrets))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        assert log is not None
        await log(params.model_copy(update={"data": redact_value(params.data, secrets)}))

    async def on_elicit(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert elicit is not None
        return await elicit(params.model_copy(update={"message": redact_text(params.message, secrets)}))

    return CallRelay(
        progress=on_progress if progress is not None else None,
        log=on_log if log is not None else None,
        log_level=relay.log_level,
        elicit=on_elicit if elicit is not None else None,
    )
