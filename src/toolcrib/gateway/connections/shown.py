"""What a read shows of a connection (R-13.1, R-13.3, R-13.6): the row as a viewer may read it, its
view, its spec and what its free text is redacted of, and the listing through the restriction
resolver (R-8.4).

Taking the narrow parts only (the store, the policy snapshot, the settings), so that a command
that only reads connections (``toolcrib connections list``) imports this and not the gateway,
its catalogs, its sessions or its OAuth flows (#33). The gateway's own use cases
(:mod:`~toolcrib.gateway.connections.manage`) show rows through the same functions, giving them
what only a serving gateway has: the start link of a flow it runs, the tokens it has seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError
from toolcrib.gateway.calls.shaping import redact_text
from toolcrib.gateway.connections.definition import malformed
from toolcrib.gateway.connections.url_secrets import connect_url, public_url, url_secret_values
from toolcrib.gateway.governance import reach
from toolcrib.policy.gates import Principal, require_operation
from toolcrib.store import connections as store
from toolcrib.store.connections import ConnectionRow
from toolcrib.upstream.spec import GrantVault, OAuthBinding, UpstreamSpec

if TYPE_CHECKING:
    from toolcrib.gateway.policy_cache import PolicyCache
    from toolcrib.gateway.reading import Reading
    from toolcrib.settings import Settings
    from toolcrib.store.database import Database

__all__ = [
    "MODES",
    "binding_from",
    "broken",
    "connection_view",
    "reachable",
    "read_connections",
    "redacted_reason",
    "scrubbed",
    "secrets_of",
    "shown_as",
    "spec_from",
]

MODES = ("oauth", "oauth_member")
"""``connections.auth`` of an OAuth connection: one shared grant, or one grant per member."""


def broken(row: ConnectionRow) -> str | None:
    """Why the stored definition of ``row`` cannot be sound (R-13.1); None when it can."""
    why = malformed(row.transport, row.command, row.url, row.connector)
    if why is None:
        return None
    return f"the stored definition is malformed ({why}): remove the connection and add it again"


def shown_as(
    row: ConnectionRow,
    viewer: Principal,
    *,
    reason: Callable[[ConnectionRow], str | None],
    link: Callable[[ConnectionRow], str | None],
) -> ConnectionRow:
    """``row`` as ``viewer`` may read it (R-13.3).

    A stdio command line is shown to owners only. The reason is redacted again on the way out
    (``reason``), so a row stored before reasons were redacted shows no secret either. A malformed
    row (R-13.1) reads as ``error`` with a reason instead of breaking the listing. ``link`` gives
    the start link of an authorization ``viewer`` started, and nobody else's (R-13.6).
    """
    why = broken(row)
    if why is not None:
        connector = row.connector if isinstance(row.connector, str) else "?"
        return replace(row, connector=connector, command=None, url=None, status="error", reason=why)
    owner = viewer.role == "owner"
    return replace(row, reason=reason(row), command=row.command if owner else None, authorize_url=link(row))


def redacted_reason(row: ConnectionRow, spec: Callable[[ConnectionRow], UpstreamSpec]) -> str | None:
    """The status reason of ``row`` as anyone may read it: redacted like its results (R-13.3) by
    the ``spec`` of the connection, or of credential shapes at least when its secrets cannot be
    opened with this key."""
    if not row.reason:
        return row.reason
    try:
        return spec(row).redact(row.reason)
    except ConfigError:
        return redact_text(row.reason, [])


def spec_from(row: ConnectionRow, secrets: dict[str, Any], oauth: OAuthBinding | None) -> UpstreamSpec:
    """How to reach ``row`` with its opened ``secrets`` and OAuth binding (no redaction yet)."""
    return UpstreamSpec(
        name=row.name,
        transport="stdio" if row.transport == "stdio" else "http",
        command=tuple(row.command or ()),
        url=connect_url(row.url, secrets),
        env=dict(secrets.get("env") or {}),
        headers=dict(secrets.get("headers") or {}),
        oauth=oauth,
    )


def binding_from(
    settings: Settings,
    row: ConnectionRow,
    member: str,
    secrets: dict[str, Any],
    *,
    vault: GrantVault,
    known: list[str],
) -> OAuthBinding:
    """The OAuth binding of ``row`` on ``member``'s grant (its client settings are sealed with its
    secrets): ``vault`` keeps the grant, ``known`` is the list of its tokens seen lately."""
    conf: dict[str, str] = secrets.get("oauth") or {}
    return OAuthBinding(
        vault=vault,
        known=known,
        account=row.name,
        member=member,
        redirect_uri=settings.upstream_oauth_redirect_uri,
        client_id=conf.get("client_id"),
        client_secret=conf.get("client_secret"),
        scope=conf.get("scope"),
        refresh_margin=settings.upstream_oauth_refresh_margin_seconds,
        pending_seconds=settings.upstream_oauth_pending_seconds,
    )


def secrets_of(policy_cache: PolicyCache, spec: UpstreamSpec) -> list[str]:
    """What is redacted from a connection's results and free text (R-12.2, R-13.3): its own
    credentials and the secret values frozen on its tools (R-9.2), as the gateway holds them now."""
    return [*spec.secret_values(), *url_secret_values(spec.url), *policy_cache.frozen_secrets(spec.name)]


def scrubbed(spec: UpstreamSpec, policy_cache: PolicyCache) -> UpstreamSpec:
    """``spec`` whose free text is redacted like its results. Read at each use: OAuth's tokens
    change, and so do the secret frozen values (R-9.2)."""
    return replace(spec, scrub=lambda text: redact_text(text, secrets_of(policy_cache, spec)))


async def reachable(
    db: Database,
    policy_cache: PolicyCache,
    principal: Principal,
    shown: Callable[[ConnectionRow], ConnectionRow],
) -> list[ConnectionRow]:
    """Every connection ``principal`` may reach (the restriction resolver decides, R-8.4), each
    as ``shown`` shows it."""
    require_operation(principal, "connections:read", "list")
    rows = [shown(r) for r in await store.list_connections(db)]
    rules = (await policy_cache.current()).rules
    return [r for r in rows if reach.lists_connection(rules, principal, r)]


async def read_connections(reading: Reading, principal: Principal) -> list[ConnectionRow]:
    """``list_connections`` of a process that only reads the store (``toolcrib connections
    list``): what a gateway just opened shows. Such a process runs no authorization flow, so no
    row carries a start link, and it has seen no OAuth token, so none is among a grant's known
    ones; a reason is redacted of the same credentials and frozen secrets."""

    def spec(row: ConnectionRow) -> UpstreamSpec:
        secrets: dict[str, Any] = reading.store.box.open(row.secrets) or {}
        binding = None
        if row.auth in MODES:
            member = ""  # the shared grant: as the gateway's own listing reads it
            binding = binding_from(reading.settings, row, member, secrets, vault=_NoGrant(), known=[])
        return scrubbed(spec_from(row, secrets, binding), reading.policy)

    def shown(row: ConnectionRow) -> ConnectionRow:
        return shown_as(row, principal, reason=lambda r: redacted_reason(r, spec), link=lambda r: None)

    return await reachable(reading.store.db, reading.policy, principal, shown)


def connection_view(row: ConnectionRow) -> dict[str, Any]:
    """What any read operation shows of a connection: never its credentials (R-13.3).

    ``target`` is the URL without its userinfo, or the stdio command line when the row carries it
    (rows read through this module carry it for owners only); otherwise ``None``.
    """
    why = broken(row)
    command = row.command if why is None else None
    target = None
    if row.transport == "http" and why is None:  # a key in the query string is hidden too
        target = redact_text(public_url(row.url or ""), [])
    if row.transport == "stdio" and command:
        target = " ".join(command)
    return {
        "name": row.name,
        "connector": row.connector if isinstance(row.connector, str) else "?",
        "transport": row.transport if row.transport in ("stdio", "http") else "?",
        "target": target,
        "status": "error" if why else row.status,
        "reason": why or row.reason,
        "tools": row.tool_count,
        "auth": row.auth if why is None else None,
        "pinning": row.pinning,
        "authorize_url": row.authorize_url if why is None else None,  # the viewer's own link only
        **_origin_view(row),
    }


def _origin_view(row: ConnectionRow) -> dict[str, Any]:
    """The registry entry a connection was added from (R-13.9); nothing for one defined by hand."""
    if not row.registry_name:
        return {}
    return {
        "from_registry": {
            "registry": row.registry,
            "name": row.registry_name,
            "version": row.registry_version,
        }
    }


class _NoGrant:
    """The vault of a binding built only to redact (:func:`read_connections`): a reading process
    starts no session and no flow, so nothing ever asks it for a grant."""

    async def tokens(self) -> tuple[dict[str, Any] | None, float | None]:
        raise _unused()

    async def save_tokens(self, tokens: dict[str, Any], refresh_by: float | None) -> None:
        raise _unused()

    async def client(self) -> dict[str, Any] | None:
        raise _unused()

    async def save_client(self, client: dict[str, Any]) -> None:
        raise _unused()

    async def open_pending(self, state: str, ttl: float, *, url: str, starter: str) -> str:
        raise _unused()

    async def take_answer(self, state: str) -> dict[str, Any] | None:
        raise _unused()

    async def drop_pending(self, state: str) -> None:
        raise _unused()


def _unused() -> RuntimeError:
    return RuntimeError("a process that only reads the store opens no OAuth grant")
