"""gateway instances and the instance of each audit row

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 12:40:00

A pending audit row belongs to the process that opened it; only when that process is gone does the
row read ``unknown`` (R-11.1). Before this, any process starting (a CLI command, a new replica)
marked every pending row unknown, including calls still in flight elsewhere.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "instances",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.add_column(sa.Column("instance", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.drop_column("instance")
    op.drop_table("instances")
