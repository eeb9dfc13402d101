"""Alembic environment: toolcrib runs migrations on a connection it opens itself (see store.database)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from toolcrib.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # the alembic command line, e.g. `alembic revision --autogenerate`
    url = context.config.get_main_option("sqlalchemy.url") or "sqlite:///toolcrib.db"
    connection = create_engine(url, hide_parameters=True).connect()

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
