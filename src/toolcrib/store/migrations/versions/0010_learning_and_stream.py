"""search that learns, and the audit stream: the schema of #23 and #24 in one step

Revision ID: 0010
Create Date: 2026-12-02 04:20:00

#23 (search learns from the organization's use, R-5.12):

- ``searches``: a search that issued handles, kept as long as its handles: who searched, the
  query's unit vector (float32), the sha256 of its text, and the text itself only when
  ``TOOLCRIB_SEARCH_LEARNING=text``.
- ``handles.search_id``: the search a handle came from (NULL for handles issued before this).
- ``search_examples``: a past search that led to a successful call of a tool: the tool, who
  searched, the query's vector, its text hash (and text, by the same setting), when. Bounded per
  tool; dropped with the tool's definition change and with the connection.

#24 (the audit stream, R-11.4):

- ``audit_outbox``: one row per final audit entry and configured sink (webhook, syslog, otlp),
  inserted in the same transaction that makes the entry final (a call's row closed, an admin row
  written, a dead process's pending row read ``unknown``), so an entry is final exactly when its
  rows exist: a crash can lose neither. A row per sink rather than one per event with per-sink
  state: each sink is claimed, backed off and emptied on its own (a webhook that is down does not
  hold the syslog stream back), and "delivered" is simply "deleted", so the backlog of a sink is a
  count and its lag the oldest ``created_at``. ``event_id`` (a UUID drawn when the entry became
  final) is the same in every sink's row, so every sink sees one id per event, however often it is
  redelivered. ``next_at``: the row is due from then on; a deliverer claiming a batch moves it
  past the sink's timeout (a claim that dies with its process expires by itself), a failure moves
  it by the sink's back-off. ``audit_id`` references the entry without cascade: retention deletes
  an entry only once no outbox row names it.
- No sink configured: no rows at all.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # --- #23 search learning -------------------------------------------------------------------
    op.create_table(
        "searches",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_searches_created_at", "searches", ["created_at"])
    op.add_column("handles", sa.Column("search_id", sa.String(length=40), nullable=True))
    op.create_table(
        "search_examples",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("tool", sa.String(length=256), nullable=False),
        sa.Column("public_name", sa.String(length=320), nullable=False),
        sa.Column("member", sa.String(length=80), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("text_sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["account"], ["connections.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_search_examples_tool", "search_examples", ["public_name", "created_at"])
    # --- #23 end ---------------------------------------------------------------------------------

    # --- #24 audit stream ------------------------------------------------------------------------
    op.create_table(
        "audit_outbox",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("audit_id", sa.Integer(), nullable=False),
        sa.Column("sink", sa.String(length=20), nullable=False),
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("next_at", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(["audit_id"], ["audit.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_outbox_due", "audit_outbox", ["sink", "next_at"])
    op.create_index("ix_audit_outbox_audit_id", "audit_outbox", ["audit_id"])
    # --- #24 end ---------------------------------------------------------------------------------


def downgrade() -> None:
    # --- #24 audit stream ------------------------------------------------------------------------
    op.drop_index("ix_audit_outbox_audit_id", table_name="audit_outbox")
    op.drop_index("ix_audit_outbox_due", table_name="audit_outbox")
    op.drop_table("audit_outbox")
    # --- #24 end ---------------------------------------------------------------------------------

    # --- #23 search learning -------------------------------------------------------------------
    op.drop_index("ix_search_examples_tool", table_name="search_examples")
    op.drop_table("search_examples")
    with op.batch_alter_table("handles") as batch:
        batch.drop_column("search_id")
    op.drop_index("ix_searches_created_at", table_name="searches")
    op.drop_table("searches")
    # --- #23 end ---------------------------------------------------------------------------------
