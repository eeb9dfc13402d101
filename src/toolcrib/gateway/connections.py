"""Connections: add, list, refresh, remove, and catalog sync (R-4.1, R-4.2, R-13.1)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from toolcrib.catalog.cards import build_card
from toolcrib.catalog.normalize import normalize_catalog
from toolcrib.errors import (
    CatalogRefused,
    ConfigError,
    InBandError,
    NotFound,
    Restricted,
    UpstreamAuthFailed,
)
from toolcrib.gateway import reach
from toolcrib.gateway.core import Gateway
from toolcrib.policy.gates import Principal
from toolcrib.store import connections as store
from toolcrib.store.connections import ConnectionRow, StoredTool
from toolcrib.upstream.session import UpstreamSpec

__all__ = [
    "add_connection",
    "connection_view",
    "list_connections",
    "refresh_connection",
    "remove_connection",
    "sync_connection",
]

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def _parse_pairs(pairs: Mapping[str, str] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (pairs or {}).items()}


async def add_connection(
    gw: Gateway,
    name: str,
    *,
    connector: str,
    command: str | list[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    actor: Principal | None = None,
) -> ConnectionRow:
    """Create a connection (status ``pending``) and sync its catalog at once.

    An ``actor`` (a member over MCP or REST) may only connect what the resolver lets them reach.
    """
    if not _NAME.match(name) or "__" in name:
        raise ConfigError(f"connection name {name!r} must match ^[a-z0-9][a-z0-9-]{{0,39}}$")
    if (command is None) == (url is None):
        raise ConfigError("give exactly one of a command (stdio) or a URL (Streamable HTTP)")
    argv = shlex.split(command) if isinstance(command, str) else list(command or [])
    if command is not None and not argv:
        raise ConfigError("the command is empty")
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{url!r} is not an http(s) URL")
    if not connector.strip():
        raise ConfigError("a connector label is required")
    if actor is not None:
        rules = (await gw.policy()).rules
        if not reach.decide(rules, actor, account=name, connector=connector.strip(), where="connect").allowed:
            raise Restricted(f"connecting {connector!r} is withheld by a restriction")
    if name in gw.connections or await store.get_connection(gw.db, name):
        raise ConfigError(f"a connection named {name!r} already exists")
    secrets = {"env": _parse_pairs(env), "headers": _parse_pairs(headers)}
    row = ConnectionRow(
        name=name,
        connector=connector.strip(),
        transport="stdio" if argv else "http",
        command=argv or None,
        url=url,
        secrets=gw.box.seal(secrets),
        status="pending",
        reason="not synced yet",
        tool_count=0,
        catalog_version=0,
    )
    await store.insert_connection(gw.db, row)
    gw.connections[name] = row
    return await sync_connection(gw, name)


def spec_of(gw: Gateway, row: ConnectionRow) -> UpstreamSpec:
    secrets: dict[str, Any] = gw.box.open(row.secrets) or {}
    return UpstreamSpec(
        name=row.name,
        transport="stdio" if row.transport == "stdio" else "http",
        command=tuple(row.command or ()),
        url=row.url,
        env=dict(secrets.get("env") or {}),
        headers=dict(secrets.get("headers") or {}),
    )


async def sync_connection(gw: Gateway, name: str) -> ConnectionRow:
    """Fetch the upstream's catalog, normalize it and make it live; failures set ``error`` + reason.

    A refused catalog (R-4.2) keeps the previous one stored, but the connection is not ``active``.
    """
    row = await store.get_connection(gw.db, name)
    if row is None:
        raise NotFound(f"no connection named {name!r}")
    session = gw.upstreams.session(spec_of(gw, row))
    try:
        raw = await session.list_tools()
        # Normalizing and carding a catalog is CPU work per tool: never on the event loop.
        records = await anyio.to_thread.run_sync(normalize_catalog, row.name, row.connector, raw)
    except (InBandError, CatalogRefused) as exc:
        status = "needs_reauth" if isinstance(exc, UpstreamAuthFailed) else "error"
        await store.set_status(gw.db, name, status, exc.message)
        fresh = await store.get_connection(gw.db, name)
        assert fresh is not None
        await gw.install_catalog(fresh, await store.load_catalog(gw.db, name))
        return fresh
    policy = await gw.policy()

    def carded() -> list[StoredTool]:
        stored = []
        for record in records:
            item = StoredTool(record=record, card=None, refused=record.refused)
            if record.refused is None:
                risk = gw.risk_of(policy, item)
                item.card = build_card(record, risk=risk)
                gw.cards.put(record, risk, (), item.card)  # the live card too, unless a value is frozen
            stored.append(item)
        return stored

    stored = await anyio.to_thread.run_sync(carded)
    refused = [s for s in stored if s.refused]
    reason = f"{len(refused)} tool(s) refused: " + "; ".join(
        f"{s.record.name}: {s.refused}" for s in refused[:3]
    )
    await store.replace_catalog(gw.db, name, stored, status="active", reason=reason if refused else None)
    fresh = await store.get_connection(gw.db, name)
    assert fresh is not None
    await gw.install_catalog(fresh, stored)
    return fresh


def _reachable(principal: Principal | None, row: ConnectionRow, rules: Any) -> bool:
    if principal is None:
        return True
    return reach.decide(
        rules, principal, account=row.name, connector=row.connector, where="list_connections"
    ).allowed


async def list_connections(gw: Gateway, principal: Principal | None = None) -> list[ConnectionRow]:
    """Every connection the caller may reach (the restriction resolver decides, R-8.4)."""
    rows = await store.list_connections(gw.db)
    rules = (await gw.policy()).rules
    return [r for r in rows if _reachable(principal, r, rules)]


async def get_connection(gw: Gateway, name: str, principal: Principal | None = None) -> ConnectionRow:
    row = await store.get_connection(gw.db, name)
    if row is None or not _reachable(principal, row, (await gw.policy()).rules):
        raise NotFound(f"no connection named {name!r}")
    return row


async def refresh_connection(gw: Gateway, name: str, principal: Principal | None = None) -> ConnectionRow:
    row = await get_connection(gw, name, principal)
    await gw.upstreams.discard(row.name)
    return await sync_connection(gw, row.name)


async def remove_connection(gw: Gateway, name: str) -> None:
    await gw.upstreams.discard(name)
    if not await store.delete_connection(gw.db, name):
        raise NotFound(f"no connection named {name!r}")
    await gw.forget_connection(name)


def connection_view(row: ConnectionRow) -> dict[str, Any]:
    """What any read operation shows of a connection: never its credentials (R-13.3)."""
    return {
        "name": row.name,
        "connector": row.connector,
        "transport": row.transport,
        "target": _without_userinfo(row.url or "")
        if row.transport == "http"
        else " ".join(row.command or []),
        "status": row.status,
        "reason": row.reason,
        "tools": row.tool_count,
    }


def _without_userinfo(url: str) -> str:
    """A URL's ``user:password@`` is a credential too (R-13.3): never shown."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))
