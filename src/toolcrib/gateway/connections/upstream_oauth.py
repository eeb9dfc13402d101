"""Upstream OAuth use cases (#14): authorize a connection, and say which connections need
authorizing again (R-13.1: ``pending`` until first authorized, ``needs_reauth`` once its grant
failed).

An authorization is started by one person and completed by that person alone (R-13.6): the link
that fixes a connection is given to who started its flow, never written in a status reason nor
shown to anyone else (``oauth_binding`` holds the start page and the callback's checks). When a
session finds the organization's grant dead, nobody has started anything: the connection reads
``needs_reauth`` and an admin refreshes it to get a link of their own (``upstream_events`` answers
the sessions' and flows' reports).

The protocol itself runs in ``toolcrib.upstream.oauth`` on the MCP SDK's client auth; here the
gateway decides what a connection's status reads and keeps the search index in step.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from toolcrib.errors import NotFound
from toolcrib.gateway.connections.catalogs import reinstall
from toolcrib.gateway.connections.oauth_binding import digest, link_for
from toolcrib.gateway.connections.shown import MODES, binding_from
from toolcrib.gateway.connections.url_secrets import connect_url
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.gateway.governance import reach
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import connections as conn_store
from toolcrib.store import oauth as grant_store
from toolcrib.store.connections import ConnectionRow
from toolcrib.upstream.spec import OAuthBinding

__all__ = [
    "MODES",
    "authorize",
    "binding_of",
    "has_grant",
    "reauth_notices",
    "wait_authorized",
]

_MAX_NOTICES = 3
_NOTICE_BYTES = 1500  # of the 6,000 bytes of a search response: the cards keep the rest


def binding_of(gw: Gateway, row: ConnectionRow, member: str = "") -> OAuthBinding | None:
    """The OAuth binding of an OAuth connection (its client settings are sealed with its secrets):
    ``member``'s own grant on a per-member connection, otherwise the shared one (``""``). The
    catalog of a per-member connection is read on the shared grant of whoever added it."""
    if row.auth not in MODES:
        return None
    member = member if row.auth == "oauth_member" else ""
    secrets: dict[str, Any] = gw.store.box.open(row.secrets) or {}
    vault, known = _Vault(gw, row.name, member), known_tokens(gw, row.name, member)
    return binding_from(gw.settings, row, member, secrets, vault=vault, known=known)


def known_tokens(gw: Gateway, account: str, member: str) -> list[str]:
    """The upstream tokens of a grant this process has seen lately: the connection's own secrets,
    redacted from its results and free text like its header values (R-12.2, R-13.3). The list is
    live: the vault adds each token it loads or stores."""
    return gw.catalog.remember_tokens(account, member, ())


class _Vault:
    """A grant in the store, sealed with the connection secrets' key (R-13.3)."""

    def __init__(self, gw: Gateway, account: str, member: str) -> None:
        self._gw, self._account, self._member = gw, account, member

    def _seen(self, tokens: dict[str, Any]) -> None:
        seen = [v for key in ("access_token", "refresh_token") if isinstance(v := tokens.get(key), str)]
        self._gw.catalog.remember_tokens(self._account, self._member, seen)

    async def tokens(self) -> tuple[dict[str, Any] | None, float | None]:
        grant = await grant_store.get_grant(self._gw.store.db, self._account, self._member)
        if grant is None or grant.tokens is None:
            return None, None
        tokens: dict[str, Any] = self._gw.store.box.open(grant.tokens)
        self._seen(tokens)
        return tokens, grant.expires_at

    async def save_tokens(self, tokens: dict[str, Any], refresh_by: float | None) -> None:
        self._seen(tokens)
        sealed = self._gw.store.box.seal(tokens)
        await grant_store.put_grant(
            self._gw.store.db, self._account, self._member, tokens=sealed, expires_at=refresh_by
        )

    async def client(self) -> dict[str, Any] | None:
        """The client registration: one per connection, made on the shared grant's flow."""
        for member in dict.fromkeys((self._member, "")):
            grant = await grant_store.get_grant(self._gw.store.db, self._account, member)
            if grant is not None and grant.client:
                return self._gw.store.box.open(grant.client)  # type: ignore[no-any-return]
        return None

    async def save_client(self, client: dict[str, Any]) -> None:
        sealed = self._gw.store.box.seal(client)
        await grant_store.put_grant(self._gw.store.db, self._account, self._member, client=sealed)

    async def open_pending(self, state: str, ttl: float, *, url: str, starter: str) -> str:
        """The provider's URL sealed, the start link kept as its hash (R-13.6): the token itself
        is given to ``starter`` alone, at least 128 random bits (256 here)."""
        token = secrets.token_urlsafe(32)
        await grant_store.open_pending(
            self._gw.store.db,
            state,
            self._account,
            self._member,
            starter=starter,
            link_sha256=digest(token),
            authorize_url=self._gw.store.box.seal(url),
            now=time.time(),
            ttl=ttl,
        )
        return token

    async def take_answer(self, state: str) -> dict[str, Any] | None:
        sealed = await grant_store.take(self._gw.store.db, state)
        return self._gw.store.box.open(sealed) if sealed is not None else None

    async def drop_pending(self, state: str) -> None:
        await grant_store.drop_pending(self._gw.store.db, state)


async def has_grant(storage: Storage, name: str, member: str = "") -> bool:
    grant = await grant_store.get_grant(storage.db, name, member)
    return grant is not None and grant.tokens is not None


UNAUTHORIZED = "not authorized at its provider: an admin must refresh the connection to authorize it"
"""The reason of an OAuth connection without a grant that nobody is authorizing (no link in it)."""
_WAITING = (
    "waiting for who started its authorization to complete it at its provider (the link was given "
    "to them alone); an admin may refresh the connection for a link of their own"
)


async def authorize(gw: Gateway, row: ConnectionRow, starter: Principal) -> ConnectionRow:
    """Start (or reuse) ``starter``'s authorization of the organization's grant of ``row``: the
    connection waits (``pending`` until first authorized, else ``needs_reauth``) with a reason
    that carries no link; the link is ``starter``'s alone (``link_for``).

    When no person is needed after all (the stored grant works), the flow has synced the
    connection already; when it could not start, the row says why.
    """
    binding = binding_of(gw, row)
    assert binding is not None
    url = connect_url(row.url, gw.store.box.open(row.secrets) or {})  # its secrets are sealed
    assert url is not None
    token = await gw.upstreams.authorizer.begin(binding, url, starter.member)
    if token is not None:
        fresh = await conn_store.get_connection(gw.store.db, row.name)
        status = "pending" if fresh is None or fresh.status == "pending" else "needs_reauth"
        await conn_store.set_status(gw.store.db, row.name, status, _WAITING)
    return await _reinstalled(gw, row.name)


async def waits_for_a_person(storage: Storage, row: ConnectionRow) -> bool:
    """Whether ``row`` is an OAuth connection without a working organization grant: whoever
    refreshes (or adds) it is handed a link to authorize it."""
    return row.auth in MODES and row.url is not None and not await has_grant(storage, row.name)


async def _reinstalled(gw: Gateway, name: str) -> ConnectionRow:
    fresh = await reinstall(gw, name)
    if fresh is None:
        raise NotFound(f"no connection named {name!r}")
    return fresh


async def wait_authorized(gw: Gateway, name: str) -> ConnectionRow:
    """Wait until the authorization this process started for ``name`` ends (at most the link's
    lifetime and a little more), then the connection as it reads. For the command line, which
    started the flow and stays to finish it when the callback reaches the serving gateway."""
    bound = gw.settings.upstream_oauth_pending_seconds + 4 * gw.settings.connect_timeout_seconds
    await gw.upstreams.authorizer.ended(name, "", bound)
    return await _reinstalled(gw, name)


def reauth_notices(gw: Gateway, principal: Principal, policy: PolicySnapshot) -> list[dict[str, Any]]:
    """The OAuth connections ``principal`` may reach that wait for an authorization, each with the
    link that fixes it when ``principal`` started that authorization (R-13.6: nobody else's link):
    search names them instead of leaving their tools silently absent.

    At most three, within ``_NOTICE_BYTES`` of the search response's budget (R-5.9): a notice
    whose link does not fit any more names the account only (``connections get`` shows it).
    """
    notices: list[dict[str, Any]] = []
    room = _NOTICE_BYTES
    for name in sorted(gw.catalog.connections):
        row = gw.catalog.connections[name]
        status, url = row.status, link_for(gw, row, principal)
        if url is not None and row.status == "active":  # this member's own grant is being authorized
            status = "needs_reauth"
        waiting = status == "needs_reauth" or (row.auth in MODES and status == "pending")
        allowed = (
            waiting
            and reach.decide(
                policy.rules, principal, account=row.name, connector=row.connector, where="search"
            ).allowed
        )
        if not allowed or len(notices) == _MAX_NOTICES:
            continue
        notice = {"account": row.name, "connector": row.connector, "status": status, "authorize_url": url}
        if _size(notice) > room:
            notice["authorize_url"] = None
        if _size(notice) <= room:
            notices.append(notice)
            room -= _size(notice)
    return notices


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())
