"""A thin per-address rate limiter for the sign-in endpoints (R-7.10), in process.

``/authorize``, ``/token``, ``/register`` and ``/auth/login`` each allow ``signin_per_minute``
requests per client address (a GCRA bucket: a burst of that many, then one per 60/N s). It is
deliberately small and self-contained: the store-backed limiter of ``web/address_limits.py``
(shared across replicas) replaces it by providing the same ``retry_after(bucket, address)``.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["AddressLimiter", "client_address", "too_many"]

_MAX_KEYS = 50_000


class AddressLimiter:
    """``per_minute`` requests per (bucket, address); memory bounded by forgetting the oldest keys."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = 60.0 / per_minute
        self._burst = per_minute * self._interval
        self._clock = clock
        self._tat: OrderedDict[str, float] = OrderedDict()

    def retry_after(self, bucket: str, address: str) -> int | None:
        """None when the request may go ahead (and it is counted), else the seconds to wait."""
        key = f"{bucket}\0{address}"
        now = self._clock()
        tat = max(self._tat.get(key, now), now)
        if tat - now + self._interval > self._burst + 1e-9:
            return max(1, math.ceil(tat - now + self._interval - self._burst))
        self._tat[key] = tat + self._interval
        self._tat.move_to_end(key)
        while len(self._tat) > _MAX_KEYS:
            self._tat.popitem(last=False)
        return None


def client_address(request: Request) -> str:
    """The address a request came from (the proxy-aware one arrives with ``web/address_limits``)."""
    return request.client.host if request.client else "unknown"


def too_many(retry_after: int) -> Response:
    body = {
        "error": "rate_limited",
        "error_description": "too many requests from this address",
        "retry_after": retry_after,
    }
    return JSONResponse(body, 429, headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"})
