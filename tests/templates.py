"""Fresh databases at the schema head, copied from one migrated template per test run (#33).

Running every migration into each test's new database was ~0.2 s of Alembic a database on SQLite,
more on PostgreSQL. A test that only needs a fresh organization gets a copy instead: a file copy of
one SQLite database migrated once per test process, ``CREATE DATABASE ... TEMPLATE`` of one migrated
PostgreSQL database (``tests.pg.PostgresServer.create_database(migrated=True)``). The gateway still
runs ``Database.migrate()`` on it at open and finds it at the head (the start-up of every
organization but a brand-new one). Tests that watch a migration run (``tests/store/
test_migrations.py``, ``store_url``, a URL of their own) keep getting empty databases.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

__all__ = ["TEMPLATE_DIR", "migrate_in_a_thread", "migrated_sqlite"]

# Where this test process keeps its SQLite template (its pytest base temporary directory), set by
# the session fixture ``tests.conftest._template_dir``.
TEMPLATE_DIR: dict[str, Path] = {}


def migrate_in_a_thread(url: str) -> None:
    """``Database(url).migrate()`` to the head, on a thread of its own (callers may be inside a
    running event loop), the engine closed after."""
    import anyio

    from toolcrib.store.database import Database

    async def migrate() -> None:
        db = Database(url)
        try:
            await db.migrate()
        finally:
            await db.close()

    failed: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(migrate)
        except BaseException as exc:  # re-raised on the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=run, name="schema-template")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


def _sqlite_template() -> Path:
    from toolcrib.store.database import SCHEMA_HEAD

    folder = TEMPLATE_DIR.get("dir")
    if folder is None:
        raise RuntimeError("tests.conftest._template_dir has not run: no folder for the template")
    template = folder / f"schema-{SCHEMA_HEAD}.db"
    if not template.exists():
        building = folder / f"schema-{SCHEMA_HEAD}.{os.getpid()}.building.db"
        migrate_in_a_thread(f"sqlite:///{building}")
        os.replace(building, template)
    return template


def migrated_sqlite(path: Path) -> str:
    """A fresh SQLite database at ``path`` already at the schema head (unless a file is there
    already: a test reopening its organization keeps it); its URL."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_sqlite_template(), path)
    return f"sqlite:///{path}"
