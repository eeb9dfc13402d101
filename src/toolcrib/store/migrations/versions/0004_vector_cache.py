"""the vector cache: tool vectors by model and text hash

Revision ID: 0004
Create Date: 2026-12-01 00:20:00

Tool vectors of the meaning channel (R-5.8) are kept by the sha256 of the text they were embedded
from, per model, so a restart or a second replica does not encode an unchanged catalog again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vectors",
        sa.Column("model_id", sa.String(length=80), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("model_id", "text_sha256"),
    )


def downgrade() -> None:
    op.drop_table("vectors")
