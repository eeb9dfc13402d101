"""Reading a registry (#35, R-13.9): answers cached with their age (an injectable clock), pages
followed by cursor up to the entry bound, an answer over the byte bound refused, and one registry
down not hiding another's entries."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from tests.e2e.inprocess import open_gateway, serve_asgi, settings_for
from tests.fixtures.registry_server import load_entries, registry_app

from toolcrib.errors import AddressRefused, UpstreamError
from toolcrib.gateway.connections.registry.adding import reader_of
from toolcrib.gateway.connections.registry.finding import search
from toolcrib.gateway.core import Gateway
from toolcrib.settings import Settings

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _reading(
    tmp_path: Path, now: list[float], entries: list[dict[str, Any]] | None = None, **settings: Any
) -> AsyncIterator[tuple[Gateway, Path]]:
    log = tmp_path / "requests.log"
    app = registry_app(entries if entries is not None else load_entries("http://127.0.0.1:9/mcp", "/x"), log)
    async with serve_asgi(app) as registry:
        urls = settings.pop("registry_url", [registry])
        values = {"registry_url": [u.replace("REGISTRY", registry) for u in urls], **settings}
        async with open_gateway(settings_for(tmp_path, semantic=False, **values), lambda: now[0]) as gw:
            yield gw, log


def _requests(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def test_r13_9_an_answer_is_reused_for_the_cache_time_and_says_its_age(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    async with _reading(tmp_path, now, registry_cache_seconds=60) as (gw, log):
        first = await search(reader_of(gw), "time")
        assert first["registries"][0]["age_seconds"] == 0
        now[0] += 45
        again = await search(reader_of(gw), "time")
        assert again["registries"][0]["age_seconds"] == 45
        assert len(_requests(log)) == 1
        now[0] += 30  # 75 s: older than the cache time, asked again
        fresh = await search(reader_of(gw), "time")
        assert fresh["registries"][0]["age_seconds"] == 0
        assert len(_requests(log)) == 2


async def test_r13_9_pages_are_followed_by_cursor_up_to_the_entry_bound(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    async with _reading(tmp_path, now, registry_max_entries=3) as (gw, log):
        found = await search(reader_of(gw), "time")
        names = [s["name"] for s in found["servers"]]
        assert len(names) == 3
        assert "io.github.example/time-legacy" not in names
        asked = _requests(log)
        assert len(asked) == 2
        assert "cursor=3" in asked[1]


async def test_r13_9_an_answer_over_the_byte_bound_is_refused_not_cut(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    entries = load_entries("http://127.0.0.1:9/mcp", "/x")
    big = copy.deepcopy(entries[0])
    big["server"]["name"] = "io.github.example/time-huge"
    big["server"]["description"] = "x" * 20_000
    async with _reading(tmp_path, now, [*entries, big], registry_max_bytes=10_000) as (gw, _):
        with pytest.raises(UpstreamError) as caught:
            await search(reader_of(gw), "time")
        assert "10000 bytes" in caught.value.message


async def test_r13_9_one_registry_down_does_not_hide_the_others(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens
    async with _reading(tmp_path, now, registry_url=[dead, "REGISTRY"]) as (gw, _):
        found = await search(reader_of(gw), "time")
        assert found["registries"][0]["registry"] == dead
        assert "error" in found["registries"][0]
        assert "io.github.example/time" in {s["name"] for s in found["servers"]}


@pytest.mark.parametrize(
    ("given", "urls"),
    [
        ("https://mcp.acme.example", ["https://mcp.acme.example"]),
        ("https://a.example, https://b.example", ["https://a.example", "https://b.example"]),
        ('["https://a.example"]', ["https://a.example"]),
    ],
)
def test_r13_9_registry_url_is_one_url_a_comma_list_or_a_json_list(
    given: str, urls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCRIB_REGISTRY_URL", given)
    assert Settings().registry_url == urls


@pytest.mark.parametrize("given", ["", "ftp://x.example", "file:///etc/passwd", "not a url"])
def test_r13_9_a_registry_url_that_is_not_http_is_a_settings_error(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLCRIB_REGISTRY_URL", given)
    with pytest.raises(ValidationError):
        Settings()


async def test_r13_5_a_registry_at_a_metadata_address_is_never_called(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    urls = ["http://169.254.169.254", "http://metadata.google.internal"]
    async with _reading(tmp_path, now, registry_url=urls) as (gw, log):
        with pytest.raises(AddressRefused):
            await search(reader_of(gw), "time")
        assert _requests(log) == []
