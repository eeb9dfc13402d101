"""approval arguments: the held call's exact arguments, sealed, for the approver to read

Revision ID: 0008
Create Date: 2026-12-01 03:10:00

An approver is shown the exact arguments of the call they approve (#14): ``approvals.arguments``
holds them sealed with the gateway's secret key (Fernet), and is emptied once the approval is
used or declined; housekeeping deletes an expired approval with them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("approvals", sa.Column("arguments", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("arguments")
