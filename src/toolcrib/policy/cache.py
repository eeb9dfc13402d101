"""A small TTL cache for role and restriction lookups (SPEC R-7.6).

Changes to roles and restrictions take effect within the cache time: 60 s by default, never
over 120 s. What must take effect on the next call is **not** cached here: a revoked grant, a
suspended or removed member; the gateway checks those on every call (pipeline step 2).

The clock is passed in (policy is pure): ``time.monotonic`` in the gateway, a fake in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from toolcrib.errors import ConfigError

__all__ = ["DEFAULT_TTL", "MAX_TTL", "PolicyCache"]

DEFAULT_TTL = 60.0
MAX_TTL = 120.0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PolicyCache(Generic[K, V]):
    """Values by key, each forgotten ``ttl`` seconds after it was stored; at most ``max_entries``."""

    def __init__(
        self, clock: Callable[[], float], ttl: float = DEFAULT_TTL, *, max_entries: int = 10_000
    ) -> None:
        if not 0 <= ttl <= MAX_TTL:
            raise ConfigError(f"policy cache time must be between 0 and {MAX_TTL:g} seconds, not {ttl:g}")
        if max_entries < 1:
            raise ConfigError("the policy cache needs room for at least one entry")
        self._clock = clock
        self._ttl = ttl
        self._max = max_entries
        self._entries: dict[K, tuple[float, V]] = {}

    @property
    def ttl(self) -> float:
        return self._ttl

    def get(self, key: K) -> V | None:
        """The value stored for ``key`` if it is still fresh, else None."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: K, value: V) -> None:
        """Store ``value``; the oldest entry makes room when the cache is full."""
        self._entries.pop(key, None)
        if len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (self._clock() + self._ttl, value)

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        """The fresh value for ``key``, calling ``load`` (and storing its answer) when there is none."""
        entry = self._entries.get(key)
        if entry is not None and self._clock() < entry[0]:
            return entry[1]
        value = load()
        self.put(key, value)
        return value

    def invalidate(self, key: K | None = None) -> None:
        """Forget ``key``, or everything (after a local change, so this replica sees it at once)."""
        if key is None:
            self._entries.clear()
        else:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
