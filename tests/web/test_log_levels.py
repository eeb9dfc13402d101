"""``logging/setLevel`` levels are kept per session and bounded (R-2.6, #21)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest

from toolcrib.web.log_levels import SessionLogLevels

pytestmark = pytest.mark.anyio


def _ctx(session: str | None) -> Any:
    """What the handler reads of a request context: the HTTP request's headers."""
    headers = {"mcp-session-id": session} if session else {}
    return SimpleNamespace(request=SimpleNamespace(headers=headers))


async def test_r2_6_each_session_keeps_its_own_level_and_the_oldest_are_forgotten() -> None:
    levels = SessionLogLevels(limit=2)
    for session, level in (("a", "debug"), ("b", "error"), ("c", "warning")):
        answer = await levels.on_set_level(_ctx(session), types.SetLevelRequestParams(level=level))
        assert answer.model_dump(exclude_none=True) == {}
    assert levels.level_of(_ctx("a")) is None  # over the bound: the oldest session is forgotten
    assert levels.level_of(_ctx("b")) == "error"
    assert levels.level_of(_ctx("c")) == "warning"
    # A stateless request (no session) is answered and remembered nowhere.
    await levels.on_set_level(_ctx(None), types.SetLevelRequestParams(level="debug"))
    assert levels.level_of(_ctx(None)) is None
    assert levels.level_of(_ctx("b")) == "error"
