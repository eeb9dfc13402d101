"""Start-up migrations (R-15.1, #12): a database at the newest schema starts without Alembic; any
other is migrated by it, on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import alembic.command
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from toolcrib.store import connections as conn_store
from toolcrib.store.database import SCHEMA_HEAD, Database

pytestmark = pytest.mark.anyio

MIGRATIONS = Path(__file__).resolve().parents[2] / "src" / "toolcrib" / "store" / "migrations"


@pytest.fixture
async def db(store_url: str) -> AsyncIterator[Database]:
    opened = Database(store_url, busy_seconds=30)
    yield opened
    await opened.close()


def test_r15_1_schema_head_is_the_newest_migration() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [SCHEMA_HEAD]


async def test_r15_1_a_new_database_is_migrated_to_the_head(db: Database) -> None:
    assert await db.schema_revision() is None
    await db.migrate()
    assert await db.schema_revision() == SCHEMA_HEAD
    assert await conn_store.list_connections(db) == []


async def test_r15_1_a_database_at_the_head_starts_without_running_alembic(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await db.migrate()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Alembic ran on a database already at the newest schema")

    monkeypatch.setattr(alembic.command, "upgrade", refuse)
    await db.migrate()
    assert await db.schema_revision() == SCHEMA_HEAD


async def test_r15_1_a_database_at_an_older_revision_is_upgraded(db: Database) -> None:
    await db.migrate("0007")
    assert await db.schema_revision() == "0007"
    await db.migrate()
    assert await db.schema_revision() == SCHEMA_HEAD
