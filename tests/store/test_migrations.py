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


async def test_r13_4_a_pin_written_before_0014_is_a_tools_pin_after_it_and_a_prompt_may_share_its_name(
    db: Database,
) -> None:
    from sqlalchemy import insert, text

    from toolcrib.catalog.pins import Pin, PinPlan
    from toolcrib.store import pins as pin_store
    from toolcrib.store.tables import connections

    await db.migrate("0013")
    async with db.begin() as conn:
        row = {"name": "desk", "connector": "Helpdesk", "transport": "stdio", "status": "active"}
        await conn.execute(insert(connections).values(**row, created_at=0.0, updated_at=0.0))
        columns = "account, tool, accepted_sha256, offered_sha256"  # the table as 0013 made it
        await conn.execute(
            text(f"INSERT INTO tool_pins ({columns}) VALUES ('desk', 'summarize', 'a1', 'b2')")
        )
    await db.migrate()
    async with db.begin() as conn:
        await pin_store.apply_plan(conn, "desk", PinPlan(write=[Pin("summarize", {}, "c3")]), "prompt")
    async with db.read() as conn:
        tool = await pin_store.load_pins(conn, "desk", "tool")
        prompt = await pin_store.load_pins(conn, "desk", "prompt")
    assert (tool["summarize"].accepted_sha256, tool["summarize"].held) == ("a1", True)
    assert (prompt["summarize"].accepted_sha256, prompt["summarize"].held) == ("c3", False)
