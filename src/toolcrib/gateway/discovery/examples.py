"""The store's search examples in this process's index (R-5.12): loaded, kept current, dropped.

Every process answers searches from its own index, so each keeps the usage channel's examples as
the store holds them. A catalog installed (at start, after a sync, after an accepted change)
reloads its tools' examples; a recording made here installs the tool's examples it returned; a
change another process made arrives as an announcement naming the tool (PostgreSQL) or is found
by the follower's timer (SQLite: per tool, the count, highest id and newest time of its examples,
compared with what this process loaded).

Nothing here decides who may do what: the checked acts are in ``gateway.discovery.learning``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

import anyio

from toolcrib.store import learning as store
from toolcrib.store.database import Database
from toolcrib.store.learning import Example
from toolcrib.store.notify import noted_tool

if TYPE_CHECKING:  # numpy and the search modules load with the first examples (a one-shot command, #33)
    from toolcrib.gateway.discovery.meaning import LiveIndex
    from toolcrib.search.usage import PastSearch

__all__ = ["LearnedExamples"]

logger = logging.getLogger(__name__)

Signature = tuple[int, int, float]


class LearnedExamples:
    """This process's copy of the stored examples, in the index's usage channel.

    ``enabled`` false (``TOOLCRIB_SEARCH_LEARNING=off``, or no meaning channel: there is no query
    vector to compare them with) loads nothing.
    """

    def __init__(self, db: Database, index: LiveIndex, clock: Callable[[], float], *, enabled: bool) -> None:
        self._db = db
        self._index = index
        self._clock = clock
        self._enabled = enabled
        self._held: dict[str, tuple[str, Signature]] = {}  # public name -> (account, what was loaded)
        self._lock = anyio.Lock()  # one reload at a time: a slow read never overwrites a newer one
        self.recording = 0
        """Recordings running beside the answers of their calls (``learning.learn_later``)."""

    @property
    def enabled(self) -> bool:
        return self._enabled and self._index.semantic

    async def install(self, public_name: str, rows: list[Example]) -> None:
        """Make ``rows`` (as the store returned them) the tool's examples in the index."""
        if not self.enabled:
            return
        async with self._lock:
            await self._install(public_name, rows)

    async def _install(self, public_name: str, rows: list[Example]) -> None:
        if rows:
            past = await anyio.to_thread.run_sync(_past, rows)
            await self._index.learn(public_name, past, self._clock())  # none usable: none learned
            self._held[public_name] = (rows[0].account, _signature(rows))
        else:
            await self._index.forget(public_name)
            self._held.pop(public_name, None)

    async def reload(self, names: Collection[str] | None = None) -> None:
        """Read the examples of ``names`` (every tool's when None) from the store again."""
        if not self.enabled:
            return
        async with self._lock:
            loaded = await store.load_examples(self._db, names)
            stale = set(self._held) if names is None else set(names)
            for public_name in sorted(stale - set(loaded)):
                await self._install(public_name, [])
            for public_name, rows in loaded.items():
                await self._install(public_name, rows)

    async def reload_account(self, account: str, names: Iterable[str]) -> None:
        """A catalog was installed: its tools' examples (and those held of tools it no longer has)."""
        held = {name for name, (of, _) in self._held.items() if of == account}
        await self.reload(held | set(names))

    async def drop_account(self, account: str) -> None:
        """A connection is gone (its examples went with it in the store)."""
        for public_name in [name for name, (of, _) in self._held.items() if of == account]:
            await self.forget(public_name)

    async def forget(self, public_name: str | None) -> None:
        """Drop one tool's examples (every tool's when None) from the index."""
        async with self._lock:
            if public_name is None:
                self._held.clear()
            else:
                self._held.pop(public_name, None)
            await self._index.forget(public_name)

    async def on_note(self, kind: str) -> None:
        """Another process announced that a tool's examples (or every tool's) changed."""
        name = noted_tool(kind)
        await self.reload(None if name is None else [name])

    async def poll(self) -> None:
        """Reload the tools whose stored examples differ from what this process loaded (SQLite,
        where no announcement comes: the follower's timer calls this, ``gateway.follower``)."""
        if not self.enabled:
            return
        stored = await store.examples_signature(self._db)
        held = {name: signature for name, (_, signature) in self._held.items()}
        changed = {n for n, sig in stored.items() if held.get(n) != sig} | (set(held) - set(stored))
        if changed:
            await self.reload(changed)


def _past(rows: list[Example]) -> list[PastSearch]:
    """The rows as the usage channel reads them (a vector of another length is passed over)."""
    import numpy as np

    from toolcrib.search.semantic import DIMENSIONS
    from toolcrib.search.usage import PastSearch

    return [
        PastSearch(np.frombuffer(r.vector, dtype="<f4").copy(), r.member, r.created_at)
        for r in rows
        if len(r.vector) == DIMENSIONS * 4
    ]


def _signature(rows: list[Example]) -> Signature:
    return (len(rows), max(r.id for r in rows), max(r.created_at for r in rows))
