"""A connection's upstream spec is built once, not per call (#12), and again when its row changes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests.e2e.inprocess import open_gateway, settings_for

from toolcrib.gateway.connections.manage import spec_of
from toolcrib.gateway.core import Gateway
from toolcrib.store.connections import ConnectionRow

pytestmark = pytest.mark.anyio


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[Gateway]:
    async with open_gateway(settings_for(tmp_path, semantic=False)) as gateway:
        yield gateway


def _row(gw: Gateway, headers: dict[str, str]) -> ConnectionRow:
    return ConnectionRow(
        name="desk", connector="Helpdesk", transport="http", command=None, url="http://127.0.0.1:9/mcp",
        secrets=gw.store.box.seal({"headers": headers}), status="active", reason=None, tool_count=0,
        catalog_version=1,
    )  # fmt: skip


async def test_r13_3_the_spec_of_an_unchanged_connection_is_not_unsealed_again(gw: Gateway) -> None:
    row = _row(gw, {"Authorization": "Bearer first-secret-value"})
    first = spec_of(gw, row)
    opened: list[object] = []
    real_open = gw.store.box.open
    gw.store.box.open = lambda sealed: opened.append(sealed) or real_open(sealed)  # type: ignore[method-assign]
    assert spec_of(gw, replace(row, catalog_version=2, tool_count=3)) is first
    assert opened == []
    assert "first-secret-value" not in first.redact("sent Bearer first-secret-value")


async def test_r13_3_new_secrets_give_a_new_spec_and_the_new_redaction(gw: Gateway) -> None:
    spec_of(gw, _row(gw, {"Authorization": "Bearer first-secret-value"}))
    changed = spec_of(gw, _row(gw, {"Authorization": "Bearer second-secret-value"}))
    assert changed.headers == {"Authorization": "Bearer second-secret-value"}
    assert "second-secret-value" not in changed.redact("sent Bearer second-secret-value")
