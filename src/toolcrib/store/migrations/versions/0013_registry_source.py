"""a connection remembers the registry entry it was added from (#35, R-13.9)

Revision ID: 0013_registry_source
Revises: 0012
Create Date: 2026-12-04 21:45:00

- ``connections.registry``: the MCP registry (its base URL) the connection was added from, NULL
  for a connection defined by hand;
- ``connections.registry_name`` / ``registry_version``: the server's name there and the version
  that was connected. ``toolcrib connectors updates`` compares them with the registry's latest;
  moving to a newer version is an explicit act.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("registry", sa.Text(), nullable=True))
        batch.add_column(sa.Column("registry_name", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("registry_version", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("registry_version")
        batch.drop_column("registry_name")
        batch.drop_column("registry")
