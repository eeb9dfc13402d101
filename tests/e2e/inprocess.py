"""A real gateway served over real HTTP (uvicorn on loopback) inside the test's own event loop.

The gateway object stays in the test's hands, so a test can add 50 connections through the gateway
functions, or turn an injectable clock, without a subprocess per step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from tests.conftest import PG_SECRET_KEY, STORE_OVERRIDE, free_port
from tests.templates import migrated_sqlite
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import members
from toolcrib.gateway.process import open_gateway as open_process
from toolcrib.settings import Settings
from toolcrib.web.app import create_app


def settings_for(tmp_path: Path, **values: Any) -> Settings:
    """A SQLite file in ``tmp_path`` (at the schema head: a copy of the migrated template, #33),
    or the database ``on_each_store`` chose for this test (every process on a PostgreSQL database
    shares one explicit secret key)."""
    url = STORE_OVERRIDE.get("url") or migrated_sqlite(tmp_path / "gw.store.db")
    if not url.startswith("sqlite"):
        values.setdefault("secret_key", PG_SECRET_KEY)
    return Settings(database_url=url, **values)


@asynccontextmanager
async def open_gateway(
    settings: Settings, clock: Callable[[], float] | None = None, **options: Any
) -> AsyncIterator[Gateway]:
    kwargs = {"clock": clock, **options} if clock is not None else options
    async with open_process(settings, **kwargs) as gw:
        yield gw


async def owner_token(gw: Gateway) -> str:
    _, token = await members.init_owner(gw.store, "owner")
    return token


@asynccontextmanager
async def serve(gw: Gateway, port: int | None = None) -> AsyncIterator[str]:
    """Serve ``gw`` on ``port`` (a free loopback port by default); yields the base URL."""
    port = port or free_port()
    settings = gw.settings.model_copy(update={"port": port})
    async with serve_asgi(create_app(settings, gateway=gw), port) as base:
        yield base


@asynccontextmanager
async def serve_asgi(app: Any, port: int | None = None) -> AsyncIterator[str]:
    """Any ASGI app served by uvicorn on ``port`` (a free loopback port by default) in the test's
    own event loop, for the block's length; yields its base URL."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(20):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event; bounded above
                await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            # Shut uvicorn down even when the block failed (its task group would cancel the server
            # mid-run, leaving its listening socket to a later test's garbage collection).
            server.should_exit = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await stopped.wait()
