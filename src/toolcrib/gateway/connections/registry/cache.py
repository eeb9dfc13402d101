"""What the registries answered, reused for ``registry_cache_seconds`` (R-13.9): the state the
gateway holds for the connector catalog (no I/O here)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "RegistryCache"]

_CACHE_ENTRIES = 256


@dataclass(frozen=True, slots=True)
class Answer:
    """A registry's parsed answer and when it was fetched (the clock's seconds)."""

    body: Any
    fetched_at: float


class RegistryCache:
    """Answers by URL, reused for ``registry_cache_seconds``; the oldest dropped past 256."""

    def __init__(self) -> None:
        self._held: OrderedDict[str, Answer] = OrderedDict()

    def get(self, url: str, now: float, max_age: float) -> Answer | None:
        found = self._held.get(url)
        if found is None or now - found.fetched_at > max_age or now < found.fetched_at:
            return None
        return found

    def put(self, url: str, answer: Answer) -> None:
        self._held[url] = answer
        self._held.move_to_end(url)
        while len(self._held) > _CACHE_ENTRIES:
            self._held.popitem(last=False)

    def clear(self) -> None:
        self._held.clear()
