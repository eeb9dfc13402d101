"""The usage channel: past searches that led to a successful call of a tool (SPEC R-5.12).

The gateway hands each tool's examples to the index (``SearchIndex.learn``): a past search's unit
vector, who searched, and when. This module keeps them per tool and, for one query, gives the
evidence the ranker and the gate read (``UsageChannel.evidence``). It is pure: the clock is the
``now`` the caller passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_EXAMPLES", "MAX_PER_MEMBER", "PastSearch", "UsageChannel"]

MAX_EXAMPLES = 64
"""Examples kept per tool (the newest)."""

MAX_PER_MEMBER = 16
"""Examples one member's searches may hold of one tool (the newest): a quarter of ``MAX_EXAMPLES``,
so one member cannot fill a tool's evidence and steer everyone's searches (R-5.12)."""

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class PastSearch:
    """A search whose handle then ran the tool successfully."""

    vector: Matrix  # the query's unit vector (float32, DIMENSIONS values)
    member: str  # who searched
    at: float  # when (seconds since the epoch)


class UsageChannel:
    """Each tool's past searches, by public name."""

    def __init__(self) -> None:
        self._past: dict[str, tuple[PastSearch, ...]] = {}
        self._now = 0.0

    def __len__(self) -> int:
        """Examples held, over every tool."""
        return sum(len(p) for p in self._past.values())

    def learn(self, public_name: str, past: Sequence[PastSearch], now: float) -> None:
        """Make ``past`` the tool's examples (the newest ``MAX_EXAMPLES``; empty forgets it)."""
        kept = tuple(sorted(past, key=lambda p: p.at)[-MAX_EXAMPLES:])
        if kept:
            self._past[public_name] = kept
        else:
            self._past.pop(public_name, None)
        self._now = max(self._now, now)

    def forget(self, public_name: str | None = None) -> None:
        """Drop one tool's examples, or every tool's."""
        if public_name is None:
            self._past.clear()
        else:
            self._past.pop(public_name, None)

    def examples(self, public_name: str) -> tuple[PastSearch, ...]:
        return self._past.get(public_name, ())
