"""the identity provider vouches for a person at each refresh (#32, R-7.11)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 19:00:00

- ``idp_vouches``: one row per member who signed in through the identity provider: the
  provider's refresh token from their latest sign-in, sealed with the gateway's secret key (NULL
  when the provider gave none), the provider's issuer and the person's subject there, when they
  signed in and when the provider last vouched for them (that sign-in, or a refresh of one of
  their OAuth grants that asked the provider again). An OAuth grant of such a member refreshes
  only while the provider vouches for them, or could not be asked for less than
  ``TOOLCRIB_OIDC_VOUCH_SECONDS``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "idp_vouches",
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("issuer", sa.String(length=512), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("refresh_sealed", sa.Text(), nullable=True),
        sa.Column("signed_in_at", sa.Float(), nullable=False),
        sa.Column("vouched_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("member"),
    )


def downgrade() -> None:
    op.drop_table("idp_vouches")
