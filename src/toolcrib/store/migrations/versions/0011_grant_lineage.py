"""grants that end with what made them, and tokens bound to their resource: the schema of #32

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 19:00:00

#32 findings 1 and 6 (R-7.11):

- ``grants.parent``: the grant this one was made from (a sign-in session from the personal token
  that signed in, an OAuth grant from the session that consented, a personal token from the grant
  of whoever created it); NULL for a root (a token made at the gateway's own host, an identity
  provider's sign-in). Revoking a grant revokes its descendants in the same transaction, and a
  child's ``expires_at`` is capped at its parent's when it is made, so the per-call read of the
  grant row alone answers for the whole chain.
- ``grants.resource``: for an OAuth grant, the resource its access tokens are for (RFC 8707):
  ``/mcp`` (and NULL, the grants made before this, means ``/mcp``) or ``/api`` when the person
  consented to the admin API explicitly. A token is refused by any other face.
- ``grants.children_until``: for a sign-in session, the end it passes on to what is made from it:
  the end of what signed in (the personal token's, an external issuer's JWT's), NULL for an
  identity provider's sign-in (re-checked at the provider at each refresh instead). A session is
  a browser's handle on the consent pages, eight hours at most; a grant made through it ends with
  what the person proved, not with the page's cookie.
- ``oauth_codes.parent``: the session grant that consented, carried to the grant the code makes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("grants", sa.Column("parent", sa.String(length=40), nullable=True))
    op.add_column("grants", sa.Column("resource", sa.String(length=16), nullable=True))
    op.add_column("grants", sa.Column("children_until", sa.Float(), nullable=True))
    op.create_index("ix_grants_parent", "grants", ["parent"])
    op.add_column("oauth_codes", sa.Column("parent", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oauth_codes") as batch:
        batch.drop_column("parent")
    op.drop_index("ix_grants_parent", table_name="grants")
    with op.batch_alter_table("grants") as batch:
        batch.drop_column("children_until")
        batch.drop_column("resource")
        batch.drop_column("parent")
