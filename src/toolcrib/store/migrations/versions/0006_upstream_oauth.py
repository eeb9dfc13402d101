"""upstream OAuth: connection auth mode, sealed upstream grants, pending authorizations

Revision ID: 0006
Create Date: 2026-12-01 02:45:00

A remote connection may authorize with OAuth 2.1 at its upstream (#14): ``connections.auth`` says
so and ``connections.authorize_url`` holds the link that authorizes it while one is pending;
``upstream_tokens`` keeps the sealed tokens and client registration; ``oauth_pending`` the
single-use ``state`` of each authorization waiting for ``/oauth/callback``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE ... ADD COLUMN on both engines: a rebuilt table would cascade to the catalog.
    op.add_column("connections", sa.Column("auth", sa.String(length=20), nullable=True))
    op.add_column("connections", sa.Column("authorize_url", sa.Text(), nullable=True))
    op.create_table(
        "upstream_tokens",
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("tokens", sa.Text(), nullable=True),
        sa.Column("client", sa.Text(), nullable=True),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["account"], ["connections.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account", "member"),
    )
    op.create_table(
        "oauth_pending",
        sa.Column("state", sa.String(length=128), nullable=False),
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("state"),
    )
    op.create_index("ix_oauth_pending_expires_at", "oauth_pending", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_oauth_pending_expires_at", table_name="oauth_pending")
    op.drop_table("oauth_pending")
    op.drop_table("upstream_tokens")
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("authorize_url")
        batch.drop_column("auth")
