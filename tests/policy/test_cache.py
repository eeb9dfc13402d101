"""R-7.6 policy cache: changes take effect within the cache time (default 60 s, never over 120 s)."""

from __future__ import annotations

import pytest

from toolcrib.errors import ConfigError
from toolcrib.policy import PolicyCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_r7_6_default_ttl_is_60_seconds() -> None:
    assert PolicyCache[str, int](FakeClock()).ttl == 60.0


@pytest.mark.parametrize("ttl", [120.01, 600.0, -1.0])
def test_r7_6_ttl_over_120_seconds_or_negative_is_refused(ttl: float) -> None:
    with pytest.raises(ConfigError):
        PolicyCache[str, int](FakeClock(), ttl)


def test_r7_6_value_is_served_until_the_ttl_then_reloaded() -> None:
    clock = FakeClock()
    cache: PolicyCache[str, str] = PolicyCache(clock, 60.0)
    loads: list[str] = []

    def load() -> str:
        loads.append("x")
        return f"v{len(loads)}"

    assert cache.get_or_load("member", load) == "v1"
    clock.now += 59.9
    assert cache.get_or_load("member", load) == "v1"
    clock.now += 0.1
    assert cache.get_or_load("member", load) == "v2"
    assert len(loads) == 2


def test_r7_6_get_forgets_expired_entries() -> None:
    clock = FakeClock()
    cache: PolicyCache[str, int] = PolicyCache(clock, 10.0)
    cache.put("k", 1)
    assert cache.get("k") == 1
    clock.now += 10.0
    assert cache.get("k") is None
    assert len(cache) == 0


def test_invalidate_forgets_one_key_or_all() -> None:
    cache: PolicyCache[str, int] = PolicyCache(FakeClock())
    cache.put("a", 1)
    cache.put("b", 2)
    cache.invalidate("a")
    assert (cache.get("a"), cache.get("b")) == (None, 2)
    cache.invalidate()
    assert len(cache) == 0


def test_cache_is_bounded_and_evicts_the_oldest() -> None:
    cache: PolicyCache[int, int] = PolicyCache(FakeClock(), max_entries=2)
    for key in range(3):
        cache.put(key, key)
    assert (cache.get(0), cache.get(1), cache.get(2)) == (None, 1, 2)


def test_zero_ttl_caches_nothing() -> None:
    cache: PolicyCache[str, int] = PolicyCache(FakeClock(), 0.0)
    cache.put("k", 1)
    assert cache.get("k") is None
