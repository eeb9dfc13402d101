"""What the upstream tests share: a supervisor of real sessions, with generous bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolcrib.upstream.supervisor import Upstreams

SESSION_OPTIONS: dict[str, Any] = {
    "call_timeout": 120.0,
    "connect_timeout": 30.0,
    "backoff": 0.1,
    "idle_stop": 900.0,
}


@pytest.fixture
async def upstreams() -> AsyncIterator[Upstreams]:
    async with Upstreams.running(**SESSION_OPTIONS) as running:
        yield running
