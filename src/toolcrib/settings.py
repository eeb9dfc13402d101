"""One settings model, read once at start-up and passed down (``TOOLCRIB_*`` environment variables)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["Settings", "async_database_url", "field_docs"]


class Settings(BaseSettings):
    """Every knob of the gateway. Each field is documented; a test fails when one is not."""

    # The docstrings below are read by ``field_docs``, not by pydantic's ``use_attribute_docstrings``:
    # that parsed this module's source at every import, ~0.1 s of every command (#33).
    model_config = SettingsConfigDict(env_prefix="TOOLCRIB_", extra="ignore")

    database_url: str = "sqlite:///toolcrib.db"
    """Where everything is remembered: ``sqlite:///path/to/file.db`` (default, embedded) or
    ``postgresql://user:pass@host/db``. The async driver is chosen by toolcrib."""

    host: str = "127.0.0.1"
    """Interface ``toolcrib serve`` binds to."""

    port: int = 8765
    """Port ``toolcrib serve`` listens on."""

    public_url: str | None = None
    """The URL clients use to reach this gateway (the OAuth resource identifier). Defaults to
    ``http://{host}:{port}``."""

    surface: Literal["search", "capability"] = "search"
    """Names of the meta-tools (R-2.5): ``search`` gives ``search_tools``/``execute_tool``,
    ``capability`` gives ``discover_capability``/``run_capability``."""

    control_prefix: str = "toolcrib"
    """Prefix of control-plane operation names: ``{prefix}__{resource}__{operation}``."""

    admin_surface: Literal["individual", "single"] = "individual"
    """How ``tools/list`` shows the control-plane operations a caller may use (R-10.1, R-10.2):
    ``individual`` lists each as its own tool ``{prefix}__{resource}__{operation}``; ``single``
    lists them behind one ``{prefix}__admin`` tool (``operation``, ``arguments``), which keeps an
    owner's whole ``tools/list`` under 3,000 bytes."""

    log_format: Literal["text", "json"] = "text"
    """Format of the one log line per request and per tool call (member, operation, outcome,
    duration; never arguments or secrets): ``text`` for people, ``json`` for log collectors."""

    stateless: bool = True
    """Serve ``/mcp`` statelessly with JSON responses (any replica answers any request). When false,
    Streamable HTTP sessions with SSE streams are kept per client."""

    allowed_origins: list[str] = Field(default_factory=list)
    """Browser ``Origin`` values allowed to call ``/mcp`` (DNS-rebinding protection) besides the
    gateway's own origin (its public URL, or the host it was reached at when the gateway knows that
    host: R-2.6). Requests with any other ``Origin`` are refused; requests without one (non-browser
    clients) are allowed."""

    http_keep_alive_seconds: int = Field(default=75, ge=1, le=3600)
    """How long an idle client connection is kept open. Longer than the 5 s after which common HTTP
    clients (httpx, the MCP SDK's) drop theirs, so the client lets go first: a server closing a
    connection just as a client sends a request on it would fail that request (#12)."""

    max_body_bytes: int = 4 * 1024 * 1024
    """Largest accepted request body on every route (R-2.4: 4 MiB). A larger one is answered 413
    ``too_large`` as soon as its declared length or the bytes received so far pass it."""

    upstream_timeout_seconds: float = 30.0
    """Timeout of every call to an upstream MCP server (R-13.2)."""

    connect_timeout_seconds: float = 20.0
    """Timeout for starting/connecting an upstream and fetching its catalog."""

    restart_backoff_seconds: float = 0.5
    """First delay before restarting a crashed stdio upstream; doubles on each failure up to 30 s."""

    idle_stop_seconds: float = 900.0
    """A stdio upstream unused this long is stopped; the next call starts it again (R-13.2)."""

    catalog_poll_seconds: float = 2.0
    """How often a gateway checks the database for connections changed by another process (the
    CLI, another replica) and reloads their catalogs, in the background (a search never waits for
    it). On PostgreSQL the changes are announced at once and this check is only a safety net, run
    30 times less often (at most once a minute)."""

    heartbeat_seconds: float = 5.0
    """How often a gateway process records that it is alive. A call left pending in the audit trail
    by a process silent for three heartbeats (or, on the same host, whose process id is gone) reads
    ``unknown`` (R-11.1)."""

    store_busy_seconds: float = 15.0
    """How long a database operation waits for a database locked by another writer (retrying with a
    growing pause) before it answers ``store_busy``."""

    housekeeping_seconds: float = 60.0
    """How often expired action handles and stored results are deleted, calls of dead processes
    marked ``unknown`` and dead processes forgotten. One gateway process at a time does it (it holds
    a lease in the database)."""

    max_upstream_message_bytes: int = 64 * 1024 * 1024
    """Largest message accepted from an upstream MCP server (one stdio line, one HTTP response). A
    larger one is discarded without being held in memory and its call answers ``too_large``."""

    handle_ttl_seconds: int = 600
    """Lifetime of an action handle (R-5.10: 10 minutes)."""

    approval_ttl_seconds: int = Field(default=600, ge=1, le=86_400)
    """Lifetime of an approval (#14): how long a call waiting for one can be approved, and how long
    an approved call stays runnable (once)."""

    policy_cache_seconds: float = 60.0
    """How long role and restriction decisions are cached (R-7.6: default 60, never over 120)."""

    result_ttl_seconds: int = 3600
    """How long a cut result is kept in full for paging (R-12.3: 1 hour)."""

    semantic: bool = True
    """Meaning search, on by default (R-5.8): the packaged embedding model ranks with the words;
    ``false`` runs words and trigrams only (``/healthz`` then says the meaning channel is down)."""

    search_learning: Literal["off", "vectors", "text"] = "vectors"
    """Search that learns from the organization's use (R-5.12): a search whose handle then ran a
    tool successfully becomes an example for that tool. ``vectors`` (the default) keeps the query's
    vector and the hash of its text, never the text; ``text`` keeps the text too; ``off`` records
    nothing and search reads no examples."""

    secret_key: str | None = None
    """Fernet key encrypting connection credentials at rest (R-13.3). When unset, a key is generated
    once and kept in ``.toolcrib/secret.key`` beside a SQLite database (else in the working
    directory). Every gateway process on one database must use the same key: the database records
    its fingerprint, and a process with another key (e.g. a replica that generated its own) refuses
    to start. Set it explicitly for replicas over PostgreSQL."""

    oauth_issuer: str | None = None
    """Issuer of OAuth 2.1 access tokens (JWT) accepted as grants; unset disables OAuth grants."""

    oauth_jwks_url: str | None = None
    """JWKS URL of the OAuth issuer (defaults to ``{issuer}/.well-known/jwks.json``)."""

    oauth_audience: str | None = None
    """Audience a JWT must carry (defaults to the public URL of ``/mcp``)."""

    upstream_oauth_callback_url: str | None = None
    """Where an upstream's authorization server sends the person back after they authorized an
    OAuth connection (#14); defaults to ``{public URL}/oauth/callback``. The command line that adds
    a connection must see the same value as the serving gateway."""

    upstream_oauth_pending_seconds: float = 600.0
    """How long an upstream authorize link stays usable; its ``state`` is single-use."""

    upstream_oauth_refresh_margin_seconds: float = 60.0
    """An upstream access token is renewed this long before it expires (at most a tenth of its
    lifetime), so no call is sent with a token about to die."""

    allow_remote_stdio: bool = False
    """Let a member's token create or change a stdio connection (a command run on this host) over
    MCP or REST. Off by default, so that no token is a way to run programs on the gateway's machine:
    only the command line on the host adds stdio servers; remote faces may add HTTP URLs."""

    log_level: str = "INFO"
    """Logging level of the gateway process."""

    deny_private_addresses: bool = False
    """Refuse upstream URLs, OAuth discovery and every fetch on someone's behalf that resolve to a
    private or loopback address too (R-13.5). Link-local and cloud-metadata addresses are refused
    whatever this says, and so are private and loopback ones for client ID metadata documents,
    which anyone can make the gateway fetch (R-13.7; see ``oauth_allow_loopback_client_documents``)."""

    oauth_allow_loopback_client_documents: bool = False
    """Development only: let ``/authorize`` fetch a client ID metadata document over plain ``http``
    from a loopback host (127.0.0.0/8, ::1). Off, such a document is fetched only over ``https``
    and never from a loopback, private or link-local address, whatever
    ``deny_private_addresses`` says (R-13.7): an anonymous request must not make the gateway call
    inside its own network."""

    registry_url: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["https://registry.modelcontextprotocol.io"]
    )
    """The MCP registries the connector catalog reads (R-13.9), each speaking the MCP Registry API
    v0.1 (``/v0.1/servers``): the official registry by default; an organization's own
    sub-registry instead or besides it: one URL, several separated by commas, or a JSON list
    (``["https://mcp.example.com", "https://registry.modelcontextprotocol.io"]``). The first
    registry that knows a server answers for it. Every fetch goes through the address policy
    (R-13.5)."""

    registry_cache_seconds: float = Field(default=300.0, ge=0, le=86_400)
    """How long an answer of a registry is reused before it is asked again; every answer shown
    says its age."""

    registry_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    """The longest one request to a registry may take, connecting included."""

    registry_max_bytes: int = Field(default=2_000_000, ge=10_000, le=50_000_000)
    """The largest answer read from a registry; a longer one is refused, not cut."""

    registry_max_entries: int = Field(default=100, ge=1, le=1000)
    """The most entries one search lists (the API's ``limit``); further ones are not fetched."""

    registry_allow: list[str] = Field(default_factory=list)
    """The registry entries that may be added as connections, as server-name patterns
    (``io.github.acme/*``, ``io.modelcontextprotocol/time``). Empty: any entry. The organization
    file's ``catalog: {allow: [...]}`` adds to this list."""

    registry_require_digest: bool = False
    """Refuse an OCI image from a registry entry unless it is pinned by digest
    (``image@sha256:...``): a tag can be moved to other contents, a digest cannot."""

    registry_uvx_options: list[str] = Field(default_factory=list)
    """Options put before the package in a PyPI server's ``uvx`` command line, as a JSON list, e.g.
    ``["--index-url", "https://pypi.internal/simple"]`` for an internal mirror, or ``["--offline"]``
    where the host must not download (uv's own settings, ``uv.toml``, apply as well). They are
    part of the stored command line, shown to owners. For an entry that declares ``fileSha256``
    they are given to ``uv pip install`` instead (``--python`` to ``uv venv``), which checks the
    file: keep them to index, cache and network options."""

    registry_install_seconds: float = Field(default=300.0, gt=0, le=3600)
    """The longest ``uv`` may take to create and fill the virtual environment of a PyPI entry that
    declares ``fileSha256`` (the package's file checked against it, R-13.9); longer, the entry is
    not added."""

    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses (or CIDR ranges) of reverse proxies whose ``X-Forwarded-Proto`` and
    ``X-Forwarded-For`` are believed: behind a TLS-terminating proxy listed here, the console's
    cookie is ``Secure`` and rate limits see the client's own address. Empty: no proxy is trusted."""

    signin_per_minute: int = Field(default=20, ge=1, le=100_000)
    """Requests per minute one client address may make to the sign-in endpoints (the console's
    sign-in, ``/authorize``, ``/token``, ``/register``, the identity provider's callback; R-7.10)."""

    oidc_issuer: str | None = None
    """The organization's OpenID Provider (R-7.7): its issuer URL, whose
    ``/.well-known/openid-configuration`` is read. Unset: people sign in with a personal access
    token instead."""

    oidc_label: str | None = None
    """The identity provider's name on the console's sign-in button ("Sign in with Okta");
    defaults to the issuer's host name."""

    oidc_client_id: str | None = None
    """The client id toolcrib was registered with at the OpenID Provider."""

    oidc_client_secret: str | None = None
    """The client secret toolcrib was registered with at the OpenID Provider (unset: a public client)."""

    oidc_scopes: str = "openid email profile"
    """Scopes asked of the OpenID Provider at sign-in (add ``groups`` where the provider needs it
    to put the group claim in the ID token)."""

    oidc_role_claim: str = "groups"
    """The ID token claim listing the person's groups (R-7.8)."""

    oidc_role_map: str = ""
    """Groups to roles, ``"tc-admins=admin,staff=member"``: a person gets the highest role any of
    their groups maps to (R-7.8)."""

    oidc_default_role: str | None = None
    """The role of a person none of whose groups is mapped; unset: such a person is refused, with a
    page that says why (R-7.8)."""

    oidc_allowed_domains: list[str] = Field(default_factory=list)
    """E-mail domains whose people may sign in (empty: any domain the provider vouches for)."""

    oidc_vouch_seconds: int = Field(default=3600, ge=60, le=86_400)
    """How long an OAuth grant of a person from the identity provider keeps refreshing when the
    provider cannot be asked about them (R-7.11). At each refresh toolcrib asks the provider again
    with the refresh token it kept (sealed) from the person's sign-in and re-maps their role; when
    the provider is unreachable, answers an error, or gave no refresh token, the refresh is
    answered only while its last word for the person (the sign-in, or the last refresh that
    reached it) is younger than this; past it the refresh is refused and the grant revoked."""

    oauth_access_token_seconds: int = Field(default=3600, ge=60, le=86_400)
    """Lifetime of an access token toolcrib's authorization server issues (R-7.7)."""

    oauth_refresh_token_days: float = Field(default=30.0, gt=0, le=365)
    """Lifetime of a refresh token toolcrib issues; each use rotates it (a reused one revokes its
    grant, R-7.7)."""

    oauth_clients_per_address: int = Field(default=20, ge=1, le=100_000)
    """Dynamic client registrations one client address may make per day (R-7.7)."""

    oauth_unused_client_days: float = Field(default=7.0, gt=0, le=365)
    """A registered client that never got a grant is forgotten after this many days."""

    # --- the audit stream and retention (R-11.4, #24) ---
    audit_sink_url: str | None = None
    """Webhook sink of the audit stream: every final audit entry is POSTed to this URL, in batches,
    as a JSON array of events (``docs/audit-event.schema.json``), at least once, each with a stable
    ``id``. The URL passes the outbound address policy like every other fetch. Unset: no webhook."""

    audit_sink_secret: str | None = None
    """Signs each webhook body: ``X-Toolcrib-Signature: sha256=<hex HMAC-SHA256 of the body>``."""

    audit_syslog: str | None = None
    """Syslog sink of the audit stream, ``host:port``: one RFC 5424 message per event over TCP,
    octet-counted (RFC 6587). Unset: no syslog."""

    audit_otlp_logs: bool = False
    """OTLP logs sink of the audit stream: one log record per event, OTLP/HTTP protobuf to
    ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` (else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/logs``), with
    ``OTEL_EXPORTER_OTLP_(LOGS_)HEADERS``. Needs ``pip install 'toolcrib[audit-otlp]'``."""

    audit_sink_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    """Timeout of one delivery to a sink; a batch a deliverer claimed is another's to take once
    three times this has passed without an answer (the deliverer died)."""

    audit_stream_poll_seconds: float = Field(default=1.0, gt=0, le=60)
    """How often each gateway process looks for audit events to deliver (on SQLite one process
    at a time delivers, under a lease)."""

    audit_stream_backoff_seconds: float = Field(default=1.0, gt=0, le=3600)
    """A sink that failed is retried after this long, doubled on each further failure."""

    audit_stream_backoff_max_seconds: float = Field(default=300.0, gt=0, le=86_400)
    """The longest wait between two attempts at a sink that keeps failing."""

    audit_retention_days: float | None = Field(default=None, gt=0)
    """Audit entries older than this many days are deleted by housekeeping, in bounded batches,
    never one a configured sink has not received yet (R-11.4). Unset: kept forever. Archive
    first with ``toolcrib audit export --since … --until …``."""

    @field_validator("audit_syslog")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        host, sep, port = (value or "").rpartition(":")
        if value and not (sep and host and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError("audit_syslog must be host:port")
        return value

    @field_validator("registry_url", mode="before")
    @classmethod
    def _registry_urls(cls, value: object) -> object:
        """One URL, a comma-separated list or a JSON list; each an http(s) URL with a host."""
        if isinstance(value, str):
            text = value.strip()
            value = (
                json.loads(text)
                if text.startswith("[")
                else [u.strip() for u in text.split(",") if u.strip()]
            )
        if not isinstance(value, list) or not value:
            raise ValueError("registry_url: at least one http(s) URL")
        for url in value:
            parts = urlsplit(url) if isinstance(url, str) else None
            if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"registry_url: {url!r} is not an http(s) URL with a host")
        return value

    @field_validator("policy_cache_seconds")
    @classmethod
    def _cache_bound(cls, value: float) -> float:
        if not 0 <= value <= 120:
            raise ValueError("policy_cache_seconds must be between 0 and 120 (R-7.6)")
        return value

    @property
    def resource_url(self) -> str:
        """The public base URL of this gateway."""
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def upstream_oauth_redirect_uri(self) -> str:
        """The redirect URI toolcrib registers at upstream authorization servers."""
        return self.upstream_oauth_callback_url or self.resource_url + "/oauth/callback"

    def sqlite_path(self) -> Path | None:
        """The SQLite file behind ``database_url``, if it is SQLite."""
        if self.database_url.startswith("sqlite:///"):
            return Path(self.database_url.removeprefix("sqlite:///"))
        return None


def field_docs() -> dict[str, str]:
    """Each setting's docstring, as written under it in :class:`Settings` (what pydantic's
    ``use_attribute_docstrings`` would read): the configuration reference is made of them."""
    import ast
    import inspect
    import itertools

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == Settings.__name__).body
    docs = {}
    for field, doc in itertools.pairwise(body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(doc.value.value)
    return docs


def async_database_url(url: str) -> str:
    """Map a user-facing URL to the async driver toolcrib uses for it."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url
