"""The database: one async engine, schema upgraded by Alembic migrations at start-up (R-15.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from toolcrib.errors import StoreError
from toolcrib.settings import async_database_url

__all__ = ["Database"]

_MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the one writer; busy_timeout waits instead of failing under load;
    # synchronous=FULL makes every committed audit row durable before the answer returns.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """An async SQLAlchemy engine over SQLite (default) or PostgreSQL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        if self.is_sqlite:
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: AsyncEngine = create_async_engine(async_database_url(url))
        except (SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open database {url!r}: {exc}") from exc
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)

    async def migrate(self) -> None:
        """Upgrade the schema to the newest migration."""

        def upgrade(sync_connection: Connection) -> None:
            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = sync_connection
            command.upgrade(config, "head")

        try:
            async with self.engine.begin() as conn:
                await conn.run_sync(upgrade)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot migrate database: {exc}") from exc

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A connection in a transaction, committed on success; database errors become StoreError."""
        try:
            async with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"database error: {exc}") from exc

    async def close(self) -> None:
        await self.engine.dispose()
