"""approvals: approval rules, single-use approvals, and who approved an audited call

Revision ID: 0005
Create Date: 2026-12-01 02:30:00

Calls of a classification (optionally of one account, one role) can require an approval (#14);
an approval is bound to the member, the tool and the hash of its arguments, single-use and
short-lived. The audit row records who approved it (``approved_by``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approval_rules",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("classification", sa.String(length=20), nullable=False),
        sa.Column("account", sa.String(length=40), nullable=True),
        sa.Column("role", sa.String(length=20), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("operation", sa.String(length=320), nullable=False),
        sa.Column("arguments_sha256", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("approved_by", sa.String(length=80), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_approvals_member_operation", "approvals", ["member", "operation"])
    with op.batch_alter_table("audit") as batch:
        batch.add_column(sa.Column("approved_by", sa.String(length=80), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("approved_by")
    op.drop_index("ix_approvals_member_operation", table_name="approvals")
    op.drop_table("approvals")
    op.drop_table("approval_rules")
