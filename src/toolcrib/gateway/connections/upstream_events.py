"""What the gateway does when its upstream sessions report (R-13.1, #14): the supervisor's callbacks.

An upstream's ``tools/list_changed`` syncs the connection; a session that finds its grant dead
sets the connection ``needs_reauth`` (or, for a member's own grant, starts that member's
authorization); an authorization flow that ended syncs the connection on its new grant or says
why it did not. These callbacks need both ``connections`` (the sync) and ``oauth`` (grants), so
they live here, above both: ``process.open_gateway`` hands them to the supervisor, and neither
use case imports this module back.
"""

from __future__ import annotations

import logging

from toolcrib.errors import StoreError
from toolcrib.gateway.connections.catalogs import reinstall
from toolcrib.gateway.connections.manage import sync_connection
from toolcrib.gateway.connections.oauth_binding import start_link
from toolcrib.gateway.connections.upstream_oauth import MODES, has_grant
from toolcrib.gateway.core import Gateway
from toolcrib.store import connections as conn_store
from toolcrib.store import notify
from toolcrib.store import oauth as grant_store
from toolcrib.upstream.spec import OAuthBinding, UpstreamSpec

__all__ = ["on_auth_needed", "on_authorized", "on_offerings_changed", "on_tools_changed"]

logger = logging.getLogger(__name__)

_DEAD = (
    "its grant at the provider stopped working: an admin must refresh the connection to authorize it again"
)


async def on_tools_changed(gw: Gateway, name: str) -> None:
    """An upstream announced that its tools changed: sync its catalog (R-4.2)."""
    await sync_connection(gw, name)


async def on_offerings_changed(gw: Gateway, name: str, kind: str) -> None:
    """An upstream said its prompts or resources changed: the other processes are told through the
    store, so their kept listings go and their clients hear it too (R-16.3, R-15.2)."""
    try:
        await notify.announce_offerings(gw.store.db, gw.instance.id, name, kind)
    except StoreError:
        logger.warning("%s: the other processes could not be told its %s changed", name, kind, exc_info=True)


async def on_auth_needed(gw: Gateway, spec: UpstreamSpec) -> str | None:
    """A session found its grant gone (a refresh refused, a token revoked).

    A member's own grant: that member's call met it, so that member starts its authorization, and
    the start link returned is for the ``needs_reauth`` answer to them alone. The organization's
    grant: nobody started anything, so no link is made; the connection reads ``needs_reauth``
    (its tools leave search) until an admin refreshes it and is given a link of their own.
    """
    row = await conn_store.get_connection(gw.store.db, spec.name)
    if row is None or spec.oauth is None or row.auth not in MODES or row.url is None:
        return None
    member = spec.oauth.member
    await grant_store.put_grant(
        gw.store.db, row.name, member, tokens=None, expires_at=None
    )  # dead: no refreshes
    if member:  # one member's own grant: only that member must authorize; the connection stays as it is
        token = await gw.upstreams.authorizer.begin(spec.oauth, spec.url or row.url, member)
        return start_link(gw, token) if token is not None else None
    await conn_store.set_status(gw.store.db, row.name, "needs_reauth", _DEAD)
    await reinstall(gw, row.name)
    return None


async def on_authorized(gw: Gateway, binding: OAuthBinding, ok: bool, failure: str | None) -> None:
    """A flow ended (a flow replaced by a newer one is not told): on success the connection syncs
    on its new grant; otherwise its link is gone and the row says why."""
    if binding.member:  # a member's own grant: their next call starts a session on it
        if ok:
            await gw.upstreams.discard(binding.account, binding.member)
        return
    if ok:
        await gw.upstreams.discard(binding.account)
        await sync_connection(gw, binding.account)
        return
    row = await conn_store.get_connection(gw.store.db, binding.account)
    if row is None:
        return
    if row.status == "active" and await has_grant(gw.store, row.name):
        return
    why = f"{failure or 'the authorization did not complete'}; refresh the connection for a new link"
    status = "needs_reauth" if row.status == "active" else row.status
    await conn_store.set_status(gw.store.db, row.name, status, why)
    await reinstall(gw, row.name)
