"""facts about the database itself: the fingerprint of the key sealing its credentials

Revision ID: 0007
Create Date: 2026-12-01 02:30:00

Every gateway process on one database must seal and open connection credentials with the same
secret key (R-13.3, R-15.2). The first process records a fingerprint of its key (an HMAC, not the
key); a process whose key does not match refuses to start (#11).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "facts",
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("facts")
