"""The tables, as SQLAlchemy Core metadata. Migrations (``store/migrations``) create and upgrade them."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "audit",
    "connections",
    "facts",
    "frozen",
    "grants",
    "handles",
    "instances",
    "leases",
    "members",
    "metadata",
    "overrides",
    "restrictions",
    "results",
    "tools",
    "vectors",
]

metadata = MetaData()

connections = Table(
    "connections",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("connector", String(80), nullable=False),
    Column("transport", String(10), nullable=False),  # stdio | http
    Column("command", JSON, nullable=True),  # [cmd, arg, ...]
    Column("url", Text, nullable=True),
    Column("secrets", Text, nullable=True),  # Fernet-encrypted JSON {"env": {...}, "headers": {...}}
    Column("status", String(20), nullable=False),  # pending | active | needs_reauth | error | disabled
    Column("reason", Text, nullable=True),
    Column("tool_count", Integer, nullable=False, default=0),
    Column("catalog_version", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

tools = Table(
    "tools",
    metadata,
    Column("account", String(40), ForeignKey("connections.name", ondelete="CASCADE"), primary_key=True),
    Column("name", String(256), primary_key=True),
    Column("record", JSON, nullable=False),  # ExactRecord.to_json()
    Column("card", JSON, nullable=True),  # stored card (None when refused)
    Column("schema_hash", String(64), nullable=False),
    Column("refused", Text, nullable=True),
)

members = Table(
    "members",
    metadata,
    Column("name", String(80), primary_key=True),
    Column("role", String(20), nullable=False),
    Column("status", String(20), nullable=False),  # active | suspended | removed
    Column("created_at", Float, nullable=False),
)

grants = Table(
    "grants",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("member", String(80), ForeignKey("members.name"), nullable=False),
    Column("kind", String(10), nullable=False),  # pat | oauth
    Column("token_hash", String(64), nullable=True, unique=True),
    Column("scopes", Text, nullable=False),  # space-separated
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("revoked_at", Float, nullable=True),
)

handles = Table(
    "handles",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=False),
    Column("public_name", String(320), nullable=False),
    Column("schema_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_handles_created_at", "created_at"),
)

restrictions = Table(
    "restrictions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("effect", String(10), nullable=False),
    Column("target_kind", String(10), nullable=False),
    Column("target", String(80), nullable=False),
    Column("connector", String(80), nullable=True),
    Column("account", String(40), nullable=True),
    Column("tool", String(256), nullable=True),
    Column("created_at", Float, nullable=False),
)

frozen = Table(
    "frozen",
    metadata,
    Column("account", String(40), primary_key=True),
    Column("tool", String(256), primary_key=True),
    Column("param", String(256), primary_key=True),
    Column("value", JSON, nullable=True),
)

overrides = Table(
    "overrides",
    metadata,
    Column("account", String(40), primary_key=True),
    Column("tool", String(256), primary_key=True),
    Column("risk", String(20), nullable=False),  # read | write | destructive | forbidden
)

audit = Table(
    "audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
    Column("member", String(80), nullable=False),
    Column("grant_id", String(40), nullable=False),
    Column("account", String(40), nullable=False),
    Column("connector", String(80), nullable=False),
    Column("operation", String(320), nullable=False),
    Column("classification", String(20), nullable=False),
    Column("approved", Boolean, nullable=False),
    Column("outcome", String(10), nullable=False),  # pending | ok | error | timeout | unknown
    Column("duration_ms", Float, nullable=True),
    Column("error_code", String(40), nullable=True),
    Column("target_id", String(200), nullable=True),
    Column("instance", String(40), nullable=True),  # the gateway process that opened the row
    Index("ix_audit_member", "member"),
    Index("ix_audit_account", "account"),
    Index("ix_audit_started_at", "started_at"),
    Index("ix_audit_outcome_instance", "outcome", "instance"),  # the pending-row scan
)

instances = Table(
    "instances",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Index("ix_instances_heartbeat_at", "heartbeat_at"),
)

leases = Table(
    "leases",
    metadata,
    Column("name", String(40), primary_key=True),  # e.g. "housekeeping"
    Column("holder", String(40), nullable=False),  # the gateway instance holding it
    Column("expires_at", Float, nullable=False),
)

results = Table(
    "results",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=False),
    Column("operation", String(320), nullable=False),
    Column("account", String(40), nullable=False),
    Column("connector", String(80), nullable=False),
    Column("payload", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("id", name="uq_results_id"),
    Index("ix_results_created_at", "created_at"),
)

vectors = Table(
    "vectors",
    metadata,
    # A tool's unit vector by the text it was embedded from: a restart or another replica
    # reuses it instead of encoding an unchanged catalog again.
    Column("model_id", String(80), primary_key=True),
    Column("text_sha256", String(64), primary_key=True),
    Column("vector", LargeBinary, nullable=False),  # float32, little-endian, DIMENSIONS values
)

# Facts about the database itself, by name: the fingerprint of the secret key.
facts = Table(
    "facts",
    metadata,
    Column("name", String(80), primary_key=True),
    Column("value", Text, nullable=False),
)
