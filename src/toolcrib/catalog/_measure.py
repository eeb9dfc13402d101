"""Size and depth of untrusted JSON, measured without recursion and stopping early (R-4.2)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Measure", "measure"]


@dataclass(frozen=True, slots=True)
class Measure:
    """Compact JSON bytes and container depth, as far as measured; ``problem`` when not JSON."""

    size: int
    depth: int
    problem: str | None = None


def measure(value: Any, *, max_bytes: int, max_depth: int | None = None) -> Measure:
    """Walk ``value`` iteratively; stop as soon as ``max_bytes`` or ``max_depth`` is crossed.

    The size is that of compact JSON (no spaces, UTF-8), exact for JSON data. Anything JSON
    cannot carry (a set, a non-string key, NaN) is reported as a problem, not raised.
    """
    size, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if max_depth is not None and deepest > max_depth:
                return Measure(size, deepest)
            size += 2 + max(len(item) - 1, 0)
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return Measure(size, deepest, "an object key is not a string")
                    size += _scalar_size(key) + 1
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            scalar = _scalar_size(item)
            if scalar < 0:
                return Measure(size, deepest, f"a value of type {type(item).__name__} is not JSON")
            size += scalar
        if size > max_bytes:
            return Measure(size, deepest)
    return Measure(size, deepest)


def _scalar_size(value: Any) -> int:
    """Bytes of one JSON scalar, or -1 when the value is not one."""
    if value is None or isinstance(value, bool):
        return 4 if value in (None, True) else 5
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if isinstance(value, int):
        return len(str(value)) if value.bit_length() < 4096 else -1
    if isinstance(value, float):
        return len(repr(value)) if math.isfinite(value) else -1
    return -1
