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
    false,
)

__all__ = [
    "approval_rules",
    "approvals",
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
    "oauth_clients",
    "oauth_codes",
    "oauth_consents",
    "oauth_pending",
    "oauth_tokens",
    "offering_changes",
    "overrides",
    "rate_buckets",
    "rate_limits",
    "restrictions",
    "results",
    "search_examples",
    "searches",
    "single_use",
    "tool_pins",
    "tools",
    "upstream_tokens",
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
    Column("auth", String(20), nullable=True),  # None (static credentials) | oauth
    Column("authorize_url", Text, nullable=True),  # the link that authorizes it, while one is pending
    # What a sync does with a tool new to this connection: accept | review | off (no pinning)
    Column("pinning", String(10), nullable=False, default="accept", server_default="accept"),
    # The registry entry it was added from: the registry's base URL, the server's name, its version
    Column("registry", Text, nullable=True),
    Column("registry_name", String(200), nullable=True),
    Column("registry_version", String(255), nullable=True),
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
    # A member from the identity provider: named by e-mail, re-mapped at each sign-in
    # unless an admin pinned the role.
    Column("email", String(320), nullable=True),
    Column("subject", String(255), nullable=True),
    Column("issuer", String(512), nullable=True),
    Column("source", String(10), nullable=False, default="local", server_default="local"),  # local | oidc
    Column("role_pinned", Boolean, nullable=False, default=False, server_default=false()),
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
    Column("client_id", String(512), nullable=True),  # an OAuth grant: the client the member consented to
    Column("last_used_at", Float, nullable=True),
    # The grant this one was made from: it ends with it; NULL for a root grant.
    Column("parent", String(40), nullable=True),
    # An OAuth grant's resource (RFC 8707): ``/mcp`` (NULL too) or ``/api``; its tokens work there only.
    Column("resource", String(16), nullable=True),
    # A sign-in session's: the end what is made from it inherits (what signed in ends then; NULL:
    # an identity provider's sign-in, re-checked at each refresh). Other grants pass on expires_at.
    Column("children_until", Float, nullable=True),
    Index("ix_grants_member", "member"),
    Index("ix_grants_parent", "parent"),
)

handles = Table(
    "handles",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=False),
    Column("public_name", String(320), nullable=False),
    Column("schema_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("search_id", String(40), nullable=True),  # the search that issued it
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
    Column("value", JSON, nullable=True),  # NULL for a secret value, which is in ``sealed``
    Column("secret", Boolean, nullable=False, default=False, server_default=false()),
    Column("sealed", Text, nullable=True),  # the secret value, Fernet-sealed like connection secrets
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
    Column("approved_by", String(80), nullable=True),  # who answered the approval step, when there was one
    Column("outcome", String(10), nullable=False),  # pending | ok | error | timeout | cancelled | unknown
    Column("duration_ms", Float, nullable=True),
    Column("error_code", String(40), nullable=True),
    Column("target_id", String(200), nullable=True),
    Column("instance", String(40), nullable=True),  # the gateway process that opened the row
    Column("kind", String(10), nullable=False, default="call", server_default="call"),  # call | admin
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

upstream_tokens = Table(
    "upstream_tokens",
    metadata,
    # An OAuth connection's grant at its upstream: the tokens and the client registration, each
    # Fernet-sealed like the connection's other secrets. ``member`` is "" for the
    # connection's shared account.
    Column("account", String(40), ForeignKey("connections.name", ondelete="CASCADE"), primary_key=True),
    Column("member", String(80), primary_key=True),
    Column("tokens", Text, nullable=True),
    Column("client", Text, nullable=True),
    Column("expires_at", Float, nullable=True),  # when the access token stops working
    Column("updated_at", Float, nullable=False),
)

oauth_pending = Table(
    "oauth_pending",
    metadata,
    # An authorization waiting for the upstream's authorization server to send the browser back to
    # /oauth/callback: single-use, bound to its ``state``, gone after ``expires_at``. ``answer`` is
    # the sealed code (or error) the callback delivered; the flow that waits takes it once.
    Column("state", String(128), primary_key=True),
    Column("account", String(40), nullable=False),
    Column("member", String(80), nullable=False),
    Column("answer", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    # Bound to who started it: the gateway's own start link (hashed, single use), the
    # provider's authorize URL sealed, and the hash of the cookie of the browser that confirmed it.
    Column("starter", String(80), nullable=True),
    Column("link_sha256", String(64), nullable=True),
    Column("link_used", Boolean, nullable=False, default=False, server_default=false()),
    Column("browser_sha256", String(64), nullable=True),
    Column("authorize_url", Text, nullable=True),
    Index("ix_oauth_pending_expires_at", "expires_at"),
    Index("ix_oauth_pending_link_sha256", "link_sha256", unique=True),
)

approval_rules = Table(
    "approval_rules",
    metadata,
    # Calls of this classification need an approval; narrowed to one account and/or one role.
    Column("id", String(40), primary_key=True),
    Column("classification", String(20), nullable=False),  # read | write | destructive
    Column("account", String(40), nullable=True),  # None: every account
    Column("role", String(20), nullable=True),  # None: every role
    Column("created_at", Float, nullable=False),
)

approvals = Table(
    "approvals",
    metadata,
    # One approval of one call: bound to the member, the tool and the hash of its exact arguments;
    # single-use (status approved -> used) and short-lived (expires_at).
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=False),
    Column("operation", String(320), nullable=False),
    Column("arguments_sha256", String(64), nullable=False),
    Column("status", String(10), nullable=False),  # pending | approved | declined | used
    Column("approved_by", String(80), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    # The call's exact arguments sealed with the secret key, shown to who may approve it; NULL once
    # the approval is used or declined (an expired one is deleted by housekeeping).
    Column("arguments", Text, nullable=True),
    Index("ix_approvals_member_operation", "member", "operation"),
)

tool_pins = Table(
    "tool_pins",
    metadata,
    # Pinned definitions: of a tool (description, input schema, annotations) or of a
    # prompt (description, arguments), told apart by ``kind`` (part of the key: a prompt and a tool
    # of the same name never share a pin); the definition accepted and its digest; what the
    # upstream offers now when it differs; a rejected digest. ``tool`` is the tool's or prompt's name.
    Column("account", String(40), ForeignKey("connections.name", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(10), primary_key=True, default="tool", server_default="tool"),  # tool | prompt
    Column("tool", String(256), primary_key=True),
    Column("accepted", JSON, nullable=True),
    Column("accepted_sha256", String(64), nullable=True),
    Column("offered", JSON, nullable=True),
    Column("offered_sha256", String(64), nullable=True),
    Column("rejected_sha256", String(64), nullable=True),
    Column("changed_at", Float, nullable=True),
)

offering_changes = Table(
    "offering_changes",
    metadata,
    # An upstream's prompts or resources list changed: on SQLite, where there are no
    # announcements, the process whose session heard it bumps ``version``; the others' followers
    # poll it (the ``instance`` that bumped it last ignores its own). PostgreSQL announces instead.
    Column("account", String(40), ForeignKey("connections.name", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(10), primary_key=True),  # prompts | resources
    Column("version", Integer, nullable=False),
    Column("instance", String(40), nullable=False),
)

rate_limits = Table(
    "rate_limits",
    metadata,
    # calls per minute and per day, narrowed to a member or a role, an account and a tool.
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=True),
    Column("role", String(20), nullable=True),
    Column("account", String(40), nullable=True),
    Column("tool", String(256), nullable=True),
    Column("per_minute", Integer, nullable=True),
    Column("per_day", Integer, nullable=True),
    Column("created_at", Float, nullable=False),
)

rate_buckets = Table(
    "rate_buckets",
    metadata,
    # One bucket per (rule, period, member): its GCRA theoretical arrival time (PostgreSQL replicas).
    Column("key", String(200), primary_key=True),
    Column("tat", Float, nullable=False),
    Index("ix_rate_buckets_tat", "tat"),
)

oauth_clients = Table(
    "oauth_clients",
    metadata,
    # Clients of toolcrib's own authorization server: registered (RFC 7591) or described by
    # a client ID metadata document (cached); the secret only as a hash.
    Column("client_id", String(512), primary_key=True),
    Column("kind", String(10), nullable=False),  # dcr | cimd
    Column("info", JSON, nullable=False),
    Column("secret_sha256", String(64), nullable=True),
    Column("registered_from", String(64), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("last_used_at", Float, nullable=True),
    Column("fetched_at", Float, nullable=True),
    Index("ix_oauth_clients_registered_from", "registered_from"),
)

oauth_codes = Table(
    "oauth_codes",
    metadata,
    # Authorization codes, hashed and single use; ``grant_id`` once exchanged (a second use revokes it).
    Column("code_sha256", String(64), primary_key=True),
    Column("client_id", String(512), nullable=False),
    Column("member", String(80), nullable=False),
    Column("scopes", Text, nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("redirect_uri", Text, nullable=False),
    Column("redirect_explicit", Boolean, nullable=False),
    Column("resource", Text, nullable=True),
    Column("expires_at", Float, nullable=False),
    Column("grant_id", String(40), nullable=True),
    Column("parent", String(40), nullable=True),  # the session grant that consented
    Index("ix_oauth_codes_expires_at", "expires_at"),
)

oauth_tokens = Table(
    "oauth_tokens",
    metadata,
    # The access and refresh tokens of an OAuth grant, hashed; a rotated refresh token has ``used_at``.
    Column("token_sha256", String(64), primary_key=True),
    Column("grant_id", String(40), ForeignKey("grants.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(10), nullable=False),  # access | refresh
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("used_at", Float, nullable=True),
    Index("ix_oauth_tokens_grant_id", "grant_id"),
    Index("ix_oauth_tokens_expires_at", "expires_at"),
)

oauth_consents = Table(
    "oauth_consents",
    metadata,
    # "Remember for this client": the scopes a member consented to for a client.
    Column("member", String(80), primary_key=True),
    Column("client_id", String(512), primary_key=True),
    Column("scopes", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

single_use = Table(
    "single_use",
    metadata,
    # Values that may be presented once (an OIDC ``state``, a start link), by hash, until they expire.
    Column("value_sha256", String(64), primary_key=True),
    Column("expires_at", Float, nullable=False),
    Index("ix_single_use_expires_at", "expires_at"),
)

# Facts about the database itself, by name: the fingerprint of the secret key.
facts = Table(
    "facts",
    metadata,
    Column("name", String(80), primary_key=True),
    Column("value", Text, nullable=False),
)

# --- #23 search learning (R-5.12) ---------------------------------------------------------------
# A search that issued handles, as long as its handles live: the query's unit vector, the hash of
# its text, the text only when TOOLCRIB_SEARCH_LEARNING=text.
searches = Table(
    "searches",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("member", String(80), nullable=False),
    Column("vector", LargeBinary, nullable=True),  # float32, little-endian; NULL without the meaning channel
    Column("text_sha256", String(64), nullable=False),
    Column("text", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Index("ix_searches_created_at", "created_at"),
)

# A past search that led to a successful call of the tool: bounded per tool.
search_examples = Table(
    "search_examples",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("account", String(40), ForeignKey("connections.name", ondelete="CASCADE"), nullable=False),
    Column("tool", String(256), nullable=False),
    Column("public_name", String(320), nullable=False),
    Column("member", String(80), nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Column("text_sha256", String(64), nullable=False),
    Column("text", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Index("ix_search_examples_tool", "public_name", "created_at"),
)
# --- #23 end -----------------------------------------------------------------------------------

# --- #24 audit stream (R-11.4) -----------------------------------------------------------------
# One row per final audit entry and configured sink, written in the transaction that makes the
# entry final and deleted once that sink took it (the migration 0010 says why this shape).
audit_outbox = Table(
    "audit_outbox",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("audit_id", Integer, ForeignKey("audit.id"), nullable=False),  # no cascade: retention waits
    Column("sink", String(20), nullable=False),  # webhook | syslog | otlp
    Column("event_id", String(36), nullable=False),  # the event's stable id, the same for every sink
    Column("created_at", Float, nullable=False),
    Column("next_at", Float, nullable=False),  # due from then on: back-off, or a deliverer's claim
    Column("attempts", Integer, nullable=False, default=0, server_default="0"),
    Index("ix_audit_outbox_due", "sink", "next_at"),
    Index("ix_audit_outbox_audit_id", "audit_id"),
)
# --- #24 end -----------------------------------------------------------------------------------

# --- #32 the identity provider vouches (R-7.11) -------------------------------------------------
# Per member from the identity provider: the provider's refresh token from the latest sign-in
# (sealed with the gateway's key; NULL when the provider gave none) and when the provider last
# vouched for the person (at that sign-in or at a refresh that asked it again).
idp_vouches = Table(
    "idp_vouches",
    metadata,
    Column("member", String(80), primary_key=True),
    Column("issuer", String(512), nullable=False),
    Column("subject", String(255), nullable=False),
    Column("refresh_sealed", Text, nullable=True),
    Column("signed_in_at", Float, nullable=False),
    Column("vouched_at", Float, nullable=False),
)
# --- #32 end -----------------------------------------------------------------------------------
