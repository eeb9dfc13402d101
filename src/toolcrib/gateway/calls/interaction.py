"""What a call's client session can carry besides the answer (#14), as the MCP face found it.

The execution pipeline stays face-agnostic: the MCP face describes here what the session of one
``tools/call`` can do — receive the upstream's progress and log lines, answer questions
(elicitation) during the call, or answer them on a second call (2026-07-28's
``InputRequiredResult``) — and the REST face and the command line pass nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from toolcrib.upstream.relay import CallRelay

__all__ = ["ApprovalPrompt", "AskLater", "Interaction"]

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class ApprovalPrompt:
    """What the member is asked to approve: the exact tool, account and arguments."""

    approval_id: str
    member: str
    operation: str
    account: str
    arguments: dict[str, Any]

    def message(self) -> str:
        shown = json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        return (
            f"Approve running {self.operation} on the account {self.account} "
            f"as {self.member}, with the arguments {shown}?"
        )


Ask = Callable[[ApprovalPrompt], Awaitable[Action]]


@dataclass(frozen=True, slots=True)
class Interaction:
    relay: CallRelay | None = None
    """The caller's side of the upstream call (progress, log lines, the upstream's questions)."""
    ask: Ask | None = None
    """Ask the member now, during this call (a session with a back-channel and elicitation)."""
    ask_later: bool = False
    """Ask by answering :class:`AskLater`; the client answers and calls again (2026-07-28)."""
    answer: tuple[str, Action] | None = field(default=None)
    """That second call's answer: the approval id and the member's action."""


class AskLater(Exception):
    """The approval question, for the MCP face to send as an ``InputRequiredResult``."""

    def __init__(self, prompt: ApprovalPrompt) -> None:
        super().__init__(prompt.approval_id)
        self.prompt = prompt
