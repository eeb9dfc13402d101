"""Upstream OAuth use cases (#14): authorize a connection, complete it at the callback, and say
which connections need authorizing again (R-13.1: ``pending`` until first authorized,
``needs_reauth`` once its grant failed, each naming the link that fixes it).

The protocol itself runs in ``toolcrib.upstream.oauth`` on the MCP SDK's client auth; here the
gateway decides what a connection's status reads and keeps the search index in step.
"""

from __future__ import annotations

import json
import time
import weakref
from typing import Any

from toolcrib.errors import InvalidArguments, NotFound
from toolcrib.gateway import reach
from toolcrib.gateway.core import Gateway, PolicySnapshot
from toolcrib.policy.gates import Principal
from toolcrib.policy.roles import has_permission
from toolcrib.store import connections as conn_store
from toolcrib.store import oauth as grant_store
from toolcrib.store.connections import ConnectionRow
from toolcrib.upstream.oauth import OAuthBinding
from toolcrib.upstream.session import UpstreamSpec

__all__ = [
    "MODES",
    "authorize",
    "binding_of",
    "complete_callback",
    "has_grant",
    "may_authorize",
    "on_auth_needed",
    "on_authorized",
    "reauth_notices",
    "wait_authorized",
]

_MAX_NOTICES = 3
_NOTICE_BYTES = 1500  # of the 6,000 bytes of a search response: the cards keep the rest
MODES = ("oauth", "oauth_member")
"""``connections.auth`` of an OAuth connection: one shared grant, or one grant per member."""


def binding_of(gw: Gateway, row: ConnectionRow, member: str = "") -> OAuthBinding | None:
    """The OAuth binding of an OAuth connection (its client settings are sealed with its secrets):
    ``member``'s own grant on a per-member connection, otherwise the shared one (``""``). The
    catalog of a per-member connection is read on the shared grant of whoever added it."""
    if row.auth not in MODES:
        return None
    member = member if row.auth == "oauth_member" else ""
    secrets: dict[str, Any] = gw.box.open(row.secrets) or {}
    conf: dict[str, str] = secrets.get("oauth") or {}
    s = gw.settings
    return OAuthBinding(
        vault=_Vault(gw, row.name, member),
        known=known_tokens(gw, row.name, member),
        account=row.name,
        member=member,
        redirect_uri=s.upstream_oauth_redirect_uri,
        client_id=conf.get("client_id"),
        client_secret=conf.get("client_secret"),
        scope=conf.get("scope"),
        refresh_margin=s.upstream_oauth_refresh_margin_seconds,
        pending_seconds=s.upstream_oauth_pending_seconds,
    )


_KNOWN: weakref.WeakKeyDictionary[Gateway, dict[tuple[str, str], list[str]]] = weakref.WeakKeyDictionary()
_KEEP_KNOWN = 6


def known_tokens(gw: Gateway, account: str, member: str) -> list[str]:
    """The upstream tokens of a grant this process has seen lately: the connection's own secrets,
    redacted from its results and free text like its header values (R-12.2, R-13.3). The list is
    live: the vault adds each token it loads or stores."""
    return _KNOWN.setdefault(gw, {}).setdefault((account, member), [])


class _Vault:
    """A grant in the store, sealed with the connection secrets' key (R-13.3)."""

    def __init__(self, gw: Gateway, account: str, member: str) -> None:
        self._gw, self._account, self._member = gw, account, member

    def _seen(self, tokens: dict[str, Any]) -> None:
        known = known_tokens(self._gw, self._account, self._member)
        for key in ("access_token", "refresh_token"):
            value = tokens.get(key)
            if isinstance(value, str) and value and value not in known:
                known.append(value)
        del known[:-_KEEP_KNOWN]

    async def tokens(self) -> tuple[dict[str, Any] | None, float | None]:
        grant = await grant_store.get_grant(self._gw.db, self._account, self._member)
        if grant is None or grant.tokens is None:
            return None, None
        tokens: dict[str, Any] = self._gw.box.open(grant.tokens)
        self._seen(tokens)
        return tokens, grant.expires_at

    async def save_tokens(self, tokens: dict[str, Any], refresh_by: float | None) -> None:
        self._seen(tokens)
        sealed = self._gw.box.seal(tokens)
        await grant_store.put_grant(
            self._gw.db, self._account, self._member, tokens=sealed, expires_at=refresh_by
        )

    async def client(self) -> dict[str, Any] | None:
        """The client registration: one per connection, made on the shared grant's flow."""
        for member in dict.fromkeys((self._member, "")):
            grant = await grant_store.get_grant(self._gw.db, self._account, member)
            if grant is not None and grant.client:
                return self._gw.box.open(grant.client)  # type: ignore[no-any-return]
        return None

    async def save_client(self, client: dict[str, Any]) -> None:
        sealed = self._gw.box.seal(client)
        await grant_store.put_grant(self._gw.db, self._account, self._member, client=sealed)

    async def open_pending(self, state: str, ttl: float) -> None:
        await grant_store.open_pending(
            self._gw.db, state, self._account, self._member, now=time.time(), ttl=ttl
        )

    async def take_answer(self, state: str) -> dict[str, Any] | None:
        sealed = await grant_store.take(self._gw.db, state)
        return self._gw.box.open(sealed) if sealed is not None else None

    async def drop_pending(self, state: str) -> None:
        await grant_store.drop_pending(self._gw.db, state)


def _sealed_answer(gw: Gateway, query: dict[str, str]) -> str:
    """What ``/oauth/callback`` delivers to a flow: the code, state and issuer, or the error."""
    if query.get("error"):
        return gw.box.seal({"error": query["error"]})
    return gw.box.seal({k: query[k] for k in ("code", "state", "iss") if query.get(k)})


async def has_grant(gw: Gateway, name: str, member: str = "") -> bool:
    grant = await grant_store.get_grant(gw.db, name, member)
    return grant is not None and grant.tokens is not None


def _reason(url: str) -> str:
    return f"authorize it at its provider: {url}"


async def authorize(gw: Gateway, row: ConnectionRow, *, status: str) -> ConnectionRow:
    """Start (or reuse) an authorization of ``row``: it reads ``status`` with the authorize URL.

    When no person is needed after all (the stored grant works), the flow has synced the
    connection already; when it could not start, the row says why.
    """
    binding = binding_of(gw, row)
    assert binding is not None
    assert row.url is not None
    url = await gw.upstreams.authorizer.begin(binding, row.url)
    if url is not None:
        await conn_store.set_status(gw.db, row.name, status, _reason(url), authorize_url=url)
    return await _reinstalled(gw, row.name)


async def _reinstalled(gw: Gateway, name: str) -> ConnectionRow:
    fresh = await conn_store.get_connection(gw.db, name)
    if fresh is None:
        raise NotFound(f"no connection named {name!r}")
    await gw.install_catalog(fresh, await conn_store.load_catalog(gw.db, name))
    return fresh


async def on_auth_needed(gw: Gateway, spec: UpstreamSpec) -> str | None:
    """A session found its grant gone (a refresh refused, a token revoked): the connection reads
    ``needs_reauth`` with a fresh authorize URL, its tools leave search, and the URL is returned
    for the ``needs_reauth`` answer of the call that met it."""
    row = await conn_store.get_connection(gw.db, spec.name)
    if row is None or spec.oauth is None or row.auth not in MODES or row.url is None:
        return None
    member = spec.oauth.member
    await grant_store.put_grant(gw.db, row.name, member, tokens=None, expires_at=None)  # dead: no refreshes
    if member:  # one member's own grant: only that member must authorize; the connection stays as it is
        return await gw.upstreams.authorizer.begin(spec.oauth, row.url)
    return (await authorize(gw, row, status="needs_reauth")).authorize_url


async def on_authorized(
    gw: Gateway, binding: OAuthBinding, ok: bool, failure: str | None, url: str | None
) -> None:
    """A flow ended: on success the connection syncs on its new grant; otherwise its link is gone
    and the row says why (unless a newer flow replaced that link meanwhile)."""
    from toolcrib.gateway.connections import sync_connection

    if binding.member:  # a member's own grant: their next call starts a session on it
        if ok:
            await gw.upstreams.discard(binding.account, binding.member)
        return
    if ok:
        await gw.upstreams.discard(binding.account)
        await sync_connection(gw, binding.account)
        return
    row = await conn_store.get_connection(gw.db, binding.account)
    if row is None or row.authorize_url != url:  # a newer flow's link stands
        return
    if row.status == "active" and await has_grant(gw, row.name):
        return
    why = f"{failure or 'the authorization did not complete'}; refresh the connection for a new link"
    status = "needs_reauth" if row.status == "active" else row.status
    await conn_store.set_status(gw.db, row.name, status, why)
    await _reinstalled(gw, row.name)


async def wait_authorized(gw: Gateway, name: str) -> ConnectionRow:
    """Wait until the authorization this process started for ``name`` ends (at most the link's
    lifetime and a little more), then the connection as it reads. For the command line, which
    started the flow and stays to finish it when the callback reaches the serving gateway."""
    bound = gw.settings.upstream_oauth_pending_seconds + 4 * gw.settings.connect_timeout_seconds
    await gw.upstreams.authorizer.ended(name, "", bound)
    return await _reinstalled(gw, name)


async def complete_callback(gw: Gateway, query: dict[str, str]) -> tuple[str, bool | None]:
    """``/oauth/callback``: deliver the authorization server's answer to the flow waiting for its
    ``state`` (single-use, before it expires), then wait (bounded) for that flow to end when it runs
    in this process. The account, and whether it is authorized now (None: not known here yet)."""
    state = query.get("state") or ""
    if not state or len(state) > 128:
        raise InvalidArguments("the callback carries no valid state")
    account = await grant_store.deliver(gw.db, state, _sealed_answer(gw, query), now=time.time())
    if account is None:
        raise NotFound("no authorization is waiting for this link: it expired or was used already")
    ok = await gw.upstreams.authorizer.delivered(state, wait_seconds=4 * gw.settings.connect_timeout_seconds)
    return account, ok


def may_authorize(viewer: Principal) -> bool:
    """Whether ``viewer`` is shown the link that authorizes a connection's shared upstream grant:
    whoever follows it binds the whole organization's connection to their own upstream account, so
    only who may change connections (``connections:write``) gets it.
    A per-member connection's link for a member's own grant is that member's (``oauth``)."""
    return has_permission(viewer.role, "connections:write")


def reauth_notices(gw: Gateway, principal: Principal, policy: PolicySnapshot) -> list[dict[str, Any]]:
    """The OAuth connections ``principal`` may reach that wait for an authorization, each with the
    link that fixes it: search names them instead of leaving their tools silently absent.

    At most three, within ``_NOTICE_BYTES`` of the search response's budget (R-5.9): a notice
    whose link does not fit any more names the account only (``connections get`` shows it).
    """
    notices: list[dict[str, Any]] = []
    room = _NOTICE_BYTES
    for name in sorted(gw.connections):
        row = gw.connections[name]
        status, url = row.status, row.authorize_url
        mine = (
            gw.upstreams.authorizer.pending_url(name, principal.member)
            if row.auth == "oauth_member"
            else None
        )
        if mine is not None and row.status == "active":  # this member's own grant is being authorized
            status, url = "needs_reauth", mine
        elif not may_authorize(principal):  # the organization's grant: an admin's link, not theirs
            url = None
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
