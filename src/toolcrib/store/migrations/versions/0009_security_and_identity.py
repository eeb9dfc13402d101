"""security round two and the organization's sign-in: the schema of #21 and #22 in one step

Revision ID: 0009
Create Date: 2026-12-02 01:20:00

#21 (security, second round):

- ``frozen.secret`` / ``frozen.sealed``: a secret frozen value (R-9.2) is kept Fernet-sealed in
  ``sealed`` and its ``value`` is NULL; a plain one keeps ``value`` as before.
- ``connections.pinning``: what a sync does with a tool new to an existing connection (R-13.4):
  ``accept`` (the default), ``review`` (held until accepted), or ``off`` (no pinning at all).
- ``tool_pins``: per tool, the definition accepted (description, input schema, annotations) and
  its digest; the definition the upstream offers now when it differs; a digest an admin rejected.
- ``rate_limits`` and ``rate_buckets`` (R-7.10): the rules, and one GCRA "theoretical arrival
  time" per bucket so that replicas over PostgreSQL share them.
- ``audit.kind``: ``call`` (a connected tool's call, R-11.1) or ``admin`` (an administrative act
  that is audited: accepting a changed tool, a refused OAuth callback, ...).
- ``oauth_pending.starter`` / ``link_sha256`` / ``link_used`` / ``browser_sha256`` /
  ``authorize_url``: an upstream authorization is bound to who started it (R-13.6): its link is the
  gateway's own start page (stored hashed, single use), the provider URL is sealed, and the
  browser that confirmed it is recorded by the hash of a cookie the callback must present.

#22 (the organization's own sign-in):

- ``members.email`` / ``subject`` / ``issuer`` / ``source`` / ``role_pinned``: a member from the
  identity provider, named by e-mail, re-mapped at every sign-in unless an admin pinned the role.
- ``grants.client_id`` / ``last_used_at``: an OAuth grant is a member's consent to one client;
  its access and refresh tokens live in ``oauth_tokens`` (hashed), all revoked with the grant.
- ``oauth_clients``: registered clients (dynamic registration, or a client ID metadata document
  cached), their secret hashed; ``oauth_codes``: authorization codes, hashed, single use;
  ``oauth_consents``: "remember for this client"; ``single_use``: values (OIDC ``state``, start
  links) that may be presented once, until they expire.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE ... ADD COLUMN on both engines: a rebuilt table would cascade to the catalog.
    op.add_column("frozen", sa.Column("secret", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("frozen", sa.Column("sealed", sa.Text(), nullable=True))
    op.add_column(
        "connections", sa.Column("pinning", sa.String(length=10), nullable=False, server_default="accept")
    )
    op.add_column("audit", sa.Column("kind", sa.String(length=10), nullable=False, server_default="call"))
    op.add_column("oauth_pending", sa.Column("starter", sa.String(length=80), nullable=True))
    op.add_column("oauth_pending", sa.Column("link_sha256", sa.String(length=64), nullable=True))
    op.add_column(
        "oauth_pending", sa.Column("link_used", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("oauth_pending", sa.Column("browser_sha256", sa.String(length=64), nullable=True))
    op.add_column("oauth_pending", sa.Column("authorize_url", sa.Text(), nullable=True))
    op.create_index("ix_oauth_pending_link_sha256", "oauth_pending", ["link_sha256"], unique=True)
    op.create_table(
        "tool_pins",
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("accepted", sa.JSON(), nullable=True),
        sa.Column("accepted_sha256", sa.String(length=64), nullable=True),
        sa.Column("offered", sa.JSON(), nullable=True),
        sa.Column("offered_sha256", sa.String(length=64), nullable=True),
        sa.Column("rejected_sha256", sa.String(length=64), nullable=True),
        sa.Column("changed_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["account"], ["connections.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account", "tool"),
    )
    op.create_table(
        "rate_limits",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=True),
        sa.Column("role", sa.String(length=20), nullable=True),
        sa.Column("account", sa.String(length=40), nullable=True),
        sa.Column("tool", sa.String(length=256), nullable=True),
        sa.Column("per_minute", sa.Integer(), nullable=True),
        sa.Column("per_day", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("tat", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_index("ix_rate_buckets_tat", "rate_buckets", ["tat"])
    op.add_column("members", sa.Column("email", sa.String(length=320), nullable=True))
    op.add_column("members", sa.Column("subject", sa.String(length=255), nullable=True))
    op.add_column("members", sa.Column("issuer", sa.String(length=512), nullable=True))
    op.add_column(
        "members", sa.Column("source", sa.String(length=10), nullable=False, server_default="local")
    )
    op.add_column(
        "members", sa.Column("role_pinned", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("grants", sa.Column("client_id", sa.String(length=512), nullable=True))
    op.add_column("grants", sa.Column("last_used_at", sa.Float(), nullable=True))
    op.create_index("ix_grants_member", "grants", ["member"])
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(length=512), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),  # dcr | cimd
        sa.Column("info", sa.JSON(), nullable=False),  # OAuthClientInformationFull, without its secret
        sa.Column("secret_sha256", sa.String(length=64), nullable=True),
        sa.Column("registered_from", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_used_at", sa.Float(), nullable=True),
        sa.Column("fetched_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("client_id"),
    )
    op.create_index("ix_oauth_clients_registered_from", "oauth_clients", ["registered_from"])
    op.create_table(
        "oauth_codes",
        sa.Column("code_sha256", sa.String(length=64), nullable=False),
        sa.Column("client_id", sa.String(length=512), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("scopes", sa.Text(), nullable=False),
        sa.Column("code_challenge", sa.String(length=128), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("redirect_explicit", sa.Boolean(), nullable=False),
        sa.Column("resource", sa.Text(), nullable=True),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=True),  # set once exchanged
        sa.PrimaryKeyConstraint("code_sha256"),
    )
    op.create_index("ix_oauth_codes_expires_at", "oauth_codes", ["expires_at"])
    op.create_table(
        "oauth_tokens",
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("grant_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),  # access | refresh
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("used_at", sa.Float(), nullable=True),  # a refresh token once rotated
        sa.ForeignKeyConstraint(["grant_id"], ["grants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("token_sha256"),
    )
    op.create_index("ix_oauth_tokens_grant_id", "oauth_tokens", ["grant_id"])
    op.create_index("ix_oauth_tokens_expires_at", "oauth_tokens", ["expires_at"])
    op.create_table(
        "oauth_consents",
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("client_id", sa.String(length=512), nullable=False),
        sa.Column("scopes", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("member", "client_id"),
    )
    op.create_table(
        "single_use",
        sa.Column("value_sha256", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("value_sha256"),
    )
    op.create_index("ix_single_use_expires_at", "single_use", ["expires_at"])


def downgrade() -> None:
    for table in ("single_use", "oauth_consents", "oauth_tokens", "oauth_codes", "oauth_clients"):
        op.drop_table(table)
    op.drop_index("ix_grants_member", table_name="grants")
    with op.batch_alter_table("grants") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("client_id")
    with op.batch_alter_table("members") as batch:
        for column in ("role_pinned", "source", "issuer", "subject", "email"):
            batch.drop_column(column)
    op.drop_index("ix_rate_buckets_tat", table_name="rate_buckets")
    op.drop_table("rate_buckets")
    op.drop_table("rate_limits")
    op.drop_table("tool_pins")
    op.drop_index("ix_oauth_pending_link_sha256", table_name="oauth_pending")
    with op.batch_alter_table("oauth_pending") as batch:
        for column in ("authorize_url", "browser_sha256", "link_used", "link_sha256", "starter"):
            batch.drop_column(column)
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("kind")
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("pinning")
    with op.batch_alter_table("frozen") as batch:
        batch.drop_column("sealed")
        batch.drop_column("secret")
