"""housekeeping: a lease table and indexes for the periodic scans

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 23:55:00

Housekeeping (purging expired handles and stored results, marking calls of dead processes
``unknown``, forgetting dead processes) runs on a timer in one process at a time: the one holding
the ``housekeeping`` row of ``leases`` until its expiry. Every scan the gateway repeats gets an
index: pending audit rows by owner (each heartbeat), handles and results by age, processes by
heartbeat.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("holder", sa.String(length=40), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_index("ix_audit_outcome_instance", "audit", ["outcome", "instance"], unique=False)
    op.create_index("ix_results_created_at", "results", ["created_at"], unique=False)
    op.create_index("ix_instances_heartbeat_at", "instances", ["heartbeat_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_instances_heartbeat_at", table_name="instances")
    op.drop_index("ix_results_created_at", table_name="results")
    op.drop_index("ix_audit_outcome_instance", table_name="audit")
    op.drop_table("leases")
