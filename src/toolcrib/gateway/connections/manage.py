"""Connections: add, list, refresh, remove, and catalog sync (R-4.1, R-4.2, R-13.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from toolcrib.catalog import pins
from toolcrib.errors import (
    AddressRefused,
    CatalogRefused,
    ConfigError,
    Forbidden,
    InBandError,
    InvalidArguments,
    NeedsReauth,
    NotFound,
    Restricted,
    UpstreamAuthFailed,
)
from toolcrib.gateway.connections import upstream_oauth as oauth
from toolcrib.gateway.connections.catalogs import forget_connection, install_catalog, reinstall, syncing
from toolcrib.gateway.connections.definition import Definition, check_definition
from toolcrib.gateway.connections.oauth_binding import link_for
from toolcrib.gateway.connections.shown import (
    broken,
    connection_view,
    reachable,
    redacted_reason,
    scrubbed,
    shown_as,
    spec_from,
)
from toolcrib.gateway.connections.url_secrets import connect_url, public_url, sealed_url
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.governance import reach
from toolcrib.gateway.live_catalog import SpecKey
from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.policy.gates import Operator, Principal, require_operation
from toolcrib.store import connections as store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.upstream.spec import UpstreamSpec

__all__ = [
    "add_connection",
    "check_stdio",
    "connection_view",
    "list_connections",
    "oauth_option",
    "refresh_connection",
    "remove_connection",
    "sync_connection",
    "update_connection",
]


def _require_stdio_allowed(gw: Gateway, actor: Principal, stdio: bool) -> None:
    """A stdio connection runs a command on this host: over MCP or REST only when allowed.

    The command line on the host (the :class:`Operator`) always may. The answer is ``forbidden``,
    not ``permission_required``: no role or scope would let a token do it, only the host's setting.
    """
    if stdio and not isinstance(actor, Operator) and not gw.settings.allow_remote_stdio:
        raise Forbidden(
            "a stdio connection runs a command on the gateway's host: add it with the command line "
            "there (or set TOOLCRIB_ALLOW_REMOTE_STDIO); over MCP and REST, connect a URL"
        )


def oauth_option(oauth: bool | None, client: Mapping[str, Any]) -> bool | dict[str, Any] | None:
    """``add_connection``'s ``oauth`` from a face's flag and client fields (``client_id``,
    ``client_secret``, ``scope``, ``per_member``): any field set implies OAuth."""
    given = {k: v for k, v in client.items() if v}
    return (given or True) if oauth or given else None


async def add_connection(
    gw: Gateway,
    name: str,
    *,
    connector: str,
    command: str | list[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    oauth: bool | Mapping[str, Any] | None = None,
    actor: Principal,
    pinning: str = "accept",
    origin: Mapping[str, str] | None = None,
    registry_inputs: Mapping[str, str] | None = None,
) -> ConnectionRow:
    """Create a connection (status ``pending``) and sync its catalog at once.

    ``origin`` is the registry entry it comes from (``registry``, ``registry_name``,
    ``registry_version``: R-13.9), recorded on the row; ``registry_inputs``, the inputs it was
    added with, are sealed with its credentials (a move to a newer version fills them again).

    ``pinning`` (R-13.4) says what a later sync does with a tool new to the connection: ``accept``
    it (the default), hold it for ``review``, or ``off``: no pinned definitions at all.

    With ``oauth`` (true, or a hand-registered ``client_id``/``client_secret`` and a ``scope``) a
    remote connection authorizes at its upstream with OAuth 2.1 (#14): it stays ``pending`` until
    who added it authorizes it, with the start link answered to them alone (``authorize_url``,
    R-13.6; the command line's is the owner's).

    The whole definition is checked before anything is saved (``invalid_arguments``). The ``actor``
    needs ``connections:write``, may only connect what the resolver lets them reach, and a stdio
    command only from the host's command line or when ``allow_remote_stdio`` is set.
    """
    require_operation(actor, "connections:write", "create")
    d = check_definition(name, connector, command, url, env, headers, oauth)
    _check_pinning(pinning)
    _require_stdio_allowed(gw, actor, d.argv is not None)
    await _require_reach(gw.policy, actor, d)
    await _require_callable_url(gw, d)
    if d.name in gw.catalog.connections or await store.get_connection(gw.store.db, d.name):
        raise ConfigError(f"a connection named {d.name!r} already exists")
    row = ConnectionRow(
        name=d.name,
        connector=d.connector,
        transport="stdio" if d.argv is not None else "http",
        command=d.argv,
        url=None if d.url is None else public_url(d.url),  # its secrets are sealed (R-13.7)
        secrets=gw.store.box.seal(_sealed(d, registry_inputs)),
        status="pending",
        reason="not synced yet",
        tool_count=0,
        catalog_version=0,
        auth=None if d.oauth is None else "oauth_member" if d.oauth.get("per_member") else "oauth",
        pinning=pinning,
        registry=(origin or {}).get("registry"),
        registry_name=(origin or {}).get("registry_name"),
        registry_version=(origin or {}).get("registry_version"),
    )
    await store.insert_connection(gw.store.db, row)
    gw.catalog.connections[d.name] = row
    return await _synced_by(gw, d.name, actor)


async def check_stdio(
    gw: Gateway,
    name: str,
    *,
    connector: str,
    command: list[str],
    env: Mapping[str, str],
    actor: Principal,
    new: bool,
) -> None:
    """The checks ``add_connection`` (``new``) or ``update_connection`` make of a stdio definition,
    made before anything is prepared on this host for it (a registry entry's verified environment,
    R-13.9): whoever may not add or change this command gets nothing installed either."""
    d = check_definition(name, connector, command, None, env, None, None)
    _require_stdio_allowed(gw, actor, True)
    await _require_reach(gw.policy, actor, d)
    if new and (d.name in gw.catalog.connections or await store.get_connection(gw.store.db, d.name)):
        raise ConfigError(f"a connection named {d.name!r} already exists")


async def update_connection(
    gw: Gateway,
    name: str,
    *,
    connector: str | None = None,
    command: str | list[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    actor: Principal,
    pinning: str | None = None,
    registry_inputs: Mapping[str, str] | None = None,
) -> ConnectionRow:
    """Change what is given (the rest is kept), checked like a new connection, then sync again.

    ``pinning`` changes what a later sync does with a tool new to the connection (R-13.4).

    A new command, or new ``env`` for a stdio server (``LD_PRELOAD`` runs code too), is refused to
    an ``actor`` unless ``allow_remote_stdio`` is set, as on creation.
    """
    require_operation(actor, "connections:write", "update")
    await get_connection(gw, name, actor)  # not_found unless the actor may reach it
    current = await store.get_connection(gw.store.db, name)
    if current is None:
        raise NotFound(f"no connection named {name!r}")
    secrets: dict[str, Any] = gw.store.box.open(current.secrets) or {}
    if command is None and url is None:
        command, url = current.command, connect_url(current.url, secrets)
    d = check_definition(
        name,
        current.connector if connector is None else connector,
        command,
        url,
        secrets.get("env") if env is None else env,
        secrets.get("headers") if headers is None else headers,
        _kept_oauth(current.auth, secrets.get("oauth")),
    )
    if pinning is not None:
        _check_pinning(pinning)
    stdio_changed = d.argv is not None and (d.argv != current.command or env is not None)
    _require_stdio_allowed(gw, actor, stdio_changed)
    await _require_reach(gw.policy, actor, d)
    await _require_callable_url(gw, d)
    await store.update_connection(
        gw.store.db,
        name,
        connector=d.connector,
        transport="stdio" if d.argv is not None else "http",
        command=d.argv,
        url=None if d.url is None else public_url(d.url),  # its secrets are sealed (R-13.7)
        secrets=gw.store.box.seal(
            _sealed(d, secrets.get("registry_inputs") if registry_inputs is None else registry_inputs)
        ),
        pinning=current.pinning if pinning is None else pinning,
    )
    await gw.upstreams.discard(name)
    return await _synced_by(gw, name, actor)


async def _synced_by(gw: Gateway, name: str, actor: Principal) -> ConnectionRow:
    """Sync ``name`` for ``actor``: an OAuth connection left without a working grant is then
    authorized by ``actor``, who alone is shown its link (R-13.6)."""
    row = await sync_connection(gw, name)
    if await oauth.waits_for_a_person(gw.store, row):
        row = await oauth.authorize(gw, row, actor)
    return _shown(gw, row, actor)


def _check_pinning(pinning: object) -> None:
    if pinning not in pins.MODES:
        raise InvalidArguments(
            "`pinning` must be accept, review or off", [{"pointer": "/pinning", "message": "unknown mode"}]
        )


def _sealed(d: Definition, registry_inputs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a connection keeps sealed (R-13.3): its env, headers and OAuth client settings, its
    URL when that carries a secret (R-13.7), and the inputs it was added from a registry with."""
    secrets: dict[str, Any] = {"env": d.env, "headers": d.headers, **sealed_url(d.url)}
    if registry_inputs:
        secrets["registry_inputs"] = dict(registry_inputs)
    if d.oauth is not None:
        secrets["oauth"] = {k: v for k, v in d.oauth.items() if k != "per_member"}
    return secrets


def _kept_oauth(auth: str | None, sealed: Any) -> dict[str, Any] | None:
    """The OAuth settings an update keeps (the mode is in the ``auth`` column, not sealed)."""
    if auth not in oauth.MODES:
        return None
    kept = dict(sealed or {})
    return {**kept, "per_member": True} if auth == "oauth_member" else kept


async def _require_reach(policy_cache: PolicyCache, actor: Principal, d: Definition) -> None:
    """An actor connects only what the restriction resolver lets them reach (R-8.4)."""
    rules = (await policy_cache.current()).rules
    if not reach.decide(rules, actor, account=d.name, connector=d.connector, where="connect").allowed:
        raise Restricted(f"connecting {d.connector!r} is withheld by a restriction")


async def _require_callable_url(gw: Gateway, d: Definition) -> None:
    """A URL the gateway will not call (R-13.5: link-local, cloud metadata, private when denied;
    by name, as a literal, or where it resolves now) is refused before anything is saved or
    called, as a bad ``/url``. Connecting checks again, on every connection its session opens."""
    if d.url is None:
        return
    try:
        await gw.addresses.check_url(d.url)
    except (AddressRefused, ConfigError) as exc:
        errors = [{"pointer": "/url", "message": exc.message}]
        raise InvalidArguments(
            f"the connection definition is not valid: /url: {exc.message}", errors
        ) from exc


def spec_of(gw: Gateway, row: ConnectionRow, member: str = "") -> UpstreamSpec:
    """How to reach ``row`` (on ``member``'s own grant when it has one per member); free text about
    it is redacted like its results (R-13.3).

    Every call asks for its connection's spec (#12): the spec of a connection without OAuth is kept
    until the row's transport, command, URL or sealed secrets change, so its secrets are not
    unsealed on every call. An OAuth connection's spec is built afresh: its tokens change."""
    if row.auth in oauth.MODES:
        return _spec(gw, row, member)
    key: SpecKey = (row.transport, tuple(row.command or ()), row.url, row.secrets)
    held = gw.catalog.specs
    found = held.get(row.name)
    if found is not None and found[0] == key:
        return found[1]
    spec = _spec(gw, row, member)
    held[row.name] = (key, spec)
    return spec


def _spec(gw: Gateway, row: ConnectionRow, member: str) -> UpstreamSpec:
    secrets: dict[str, Any] = gw.store.box.open(row.secrets) or {}
    return scrubbed(spec_from(row, secrets, oauth.binding_of(gw, row, member)), gw.policy)


async def sync_connection(gw: Gateway, name: str) -> ConnectionRow:
    """Fetch the upstream's catalog, normalize it and make it live; failures set ``error`` + reason.

    A refused catalog (R-4.2) keeps the previous one stored, but the connection is not ``active``.
    One process at a time syncs a connection (a PostgreSQL advisory lock, R-15.2): when another
    replica is syncing it already (each replica sees an upstream's ``tools/list_changed``), this
    one waits for it and takes its result from the store.
    """
    wait = gw.settings.connect_timeout_seconds + gw.settings.upstream_timeout_seconds
    with syncing(gw, name):
        async with gw.store.db.exclusive(f"sync:{name}", wait_seconds=wait) as alone:
            if alone:
                return await _sync(gw, name)
        row = await reinstall(gw, name)  # the other replica's result, as it stored it
        if row is None:
            raise NotFound(f"no connection named {name!r}")
        return row


async def _sync(gw: Gateway, name: str) -> ConnectionRow:
    # Imported by the syncs only: jsonschema and the card's sanitizer are no part of a one-shot
    # command that reads connections (#33).
    from toolcrib.catalog.cards import build_card
    from toolcrib.catalog.normalize import normalize_catalog

    row = await store.get_connection(gw.store.db, name)
    if row is None:
        raise NotFound(f"no connection named {name!r}")
    why = broken(row)
    if why is not None:  # nothing is started from a definition that cannot be sound
        return await _failed(gw, name, "error", why)
    if row.auth in oauth.MODES and not await oauth.has_grant(gw.store, name):  # a person must authorize it
        status = "pending" if row.status == "pending" else "needs_reauth"
        return await _failed(gw, name, status, oauth.UNAUTHORIZED)
    spec = spec_of(gw, row)
    try:
        raw = await gw.upstreams.session(spec).list_tools()
        # Normalizing and carding a catalog is CPU work per tool: never on the event loop.
        records = await anyio.to_thread.run_sync(normalize_catalog, row.name, row.connector, raw)
    except (InBandError, CatalogRefused) as exc:
        status = "needs_reauth" if isinstance(exc, UpstreamAuthFailed | NeedsReauth) else "error"  # R-13.1
        return await _failed(gw, name, status, spec.redact(exc.message))  # redacted before stored
    policy = await gw.policy.current()

    def carded() -> list[StoredTool]:
        stored = []
        for record in records:
            item = StoredTool(record=record, card=None, refused=record.refused)
            if record.refused is None:
                item.digest = pins.digest(pins.definition(record))  # compared with its pin (R-13.4)
                risk = policy.risk_of(item)
                item.card = build_card(record, risk=risk)
                gw.cards.put(record, risk, (), item.card)  # the live card too, unless a value is frozen
            stored.append(item)
        return stored

    stored = await anyio.to_thread.run_sync(carded)
    refused = [s for s in stored if s.refused]
    reason = f"{len(refused)} tool(s) refused: " + "; ".join(
        f"{s.record.name}: {s.refused}" for s in refused[:3]
    )
    await store.replace_catalog(
        gw.store.db, name, stored, status="active", reason=spec.redact(reason) if refused else None
    )
    fresh = await store.get_connection(gw.store.db, name)
    assert fresh is not None
    await install_catalog(gw, fresh, stored)
    return fresh


async def _failed(gw: Gateway, name: str, status: str, reason: str) -> ConnectionRow:
    """Record a failed sync (R-13.1); the previous catalog stays stored but is not live."""
    await store.set_status(gw.store.db, name, status, reason)
    fresh = await reinstall(gw, name)
    assert fresh is not None
    return fresh


def _shown(gw: Gateway, row: ConnectionRow, viewer: Principal) -> ConnectionRow:
    """``row`` as ``viewer`` may read it (R-13.3): :func:`~toolcrib.gateway.connections.shown.shown_as`
    with this gateway's redaction and the start link of a flow it runs for ``viewer`` (R-13.6)."""
    return shown_as(row, viewer, reason=lambda r: shown_reason(gw, r), link=lambda r: link_for(gw, r, viewer))


def shown_reason(gw: Gateway, row: ConnectionRow) -> str | None:
    """The status reason of ``row`` as anyone may read it: redacted like its results (R-13.3), so a
    reason stored before reasons were redacted shows no secret either, on any path that shows it."""
    return redacted_reason(row, lambda r: spec_of(gw, r))


async def list_connections(gw: Gateway, principal: Principal) -> list[ConnectionRow]:
    """Every connection the caller may reach (the restriction resolver decides, R-8.4), as the
    caller may read it."""
    return await reachable(gw.store.db, gw.policy, principal, lambda r: _shown(gw, r, principal))


async def get_connection(gw: Gateway, name: str, principal: Principal) -> ConnectionRow:
    require_operation(principal, "connections:read", "get")
    row = await store.get_connection(gw.store.db, name)
    if row is not None:
        row = _shown(gw, row, principal)
    if row is None or not reach.lists_connection((await gw.policy.current()).rules, principal, row):
        raise NotFound(f"no connection named {name!r}")
    return row


async def refresh_connection(gw: Gateway, name: str, principal: Principal) -> ConnectionRow:
    """Sync again; an OAuth connection without a working grant hands ``principal`` a start link of
    their own to authorize it (R-13.6)."""
    require_operation(principal, "connections:write", "refresh")
    row = await get_connection(gw, name, principal)
    await gw.upstreams.discard(row.name)
    return await _synced_by(gw, row.name, principal)


async def remove_connection(gw: Gateway, name: str, principal: Principal) -> None:
    require_operation(principal, "connections:write", "delete")
    await get_connection(gw, name, principal)  # not_found unless the principal may reach it
    await gw.upstreams.discard(name)
    if not await store.delete_connection(gw.store.db, name):
        raise NotFound(f"no connection named {name!r}")
    await forget_connection(gw, name)
