"""a prompt's definition is pinned like a tool's (#34, R-13.4); list changes reach SQLite replicas

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 22:45:00

- ``tool_pins.kind``: ``tool`` (every pin so far) or ``prompt``; it is part of the key, so a
  prompt and a tool of one connection with the same name never share a pin.
- ``offering_changes``: per connection and kind (``prompts``, ``resources``), a version bumped
  when an upstream says that list changed, and the process that bumped it: how processes on one
  SQLite file learn it (PostgreSQL announces it instead).

The table is copied into one with the new key (the same on SQLite and PostgreSQL).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_FIELDS = "account, tool, accepted, accepted_sha256, offered, offered_sha256, rejected_sha256, changed_at"


def _table(name: str, *, with_kind: bool) -> None:
    key = ["account", "kind", "tool"] if with_kind else ["account", "tool"]
    kind = (
        [sa.Column("kind", sa.String(length=10), nullable=False, server_default="tool")] if with_kind else []
    )
    op.create_table(
        name,
        sa.Column("account", sa.String(length=40), nullable=False),
        *kind,
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("accepted", sa.JSON(), nullable=True),
        sa.Column("accepted_sha256", sa.String(length=64), nullable=True),
        sa.Column("offered", sa.JSON(), nullable=True),
        sa.Column("offered_sha256", sa.String(length=64), nullable=True),
        sa.Column("rejected_sha256", sa.String(length=64), nullable=True),
        sa.Column("changed_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["account"], ["connections.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint(*key),
    )


def upgrade() -> None:
    _table("tool_pins_0014", with_kind=True)
    op.execute(f"INSERT INTO tool_pins_0014 (kind, {_FIELDS}) SELECT 'tool', {_FIELDS} FROM tool_pins")
    op.drop_table("tool_pins")
    op.rename_table("tool_pins_0014", "tool_pins")
    op.create_table(
        "offering_changes",
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("instance", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["account"], ["connections.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account", "kind"),
    )


def downgrade() -> None:
    op.drop_table("offering_changes")
    _table("tool_pins_0013", with_kind=False)
    op.execute(f"INSERT INTO tool_pins_0013 ({_FIELDS}) SELECT {_FIELDS} FROM tool_pins WHERE kind = 'tool'")
    op.drop_table("tool_pins")
    op.rename_table("tool_pins_0013", "tool_pins")
