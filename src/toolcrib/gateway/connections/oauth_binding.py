"""Who may complete an upstream OAuth authorization: the person who started it (R-13.6).

Completing an authorization binds a connection (or a member's own grant) to whichever account at
the provider completes it. So the provider's authorize URL, with its live ``state``, never leaves
the gateway but as the redirect answered to one browser:

1. whoever starts a flow (``connections create`` / ``refresh`` on any face, or a member whose own
   grant of a per-member connection is needed) is handed the gateway's own start link, shown to
   them alone (``link_for``): never in a status reason, never to another member or admin;
2. the start page (``/admin/oauth/start/{token}``) names the connection and the provider's host;
   confirming it (a POST, once) records the SHA-256 of a secret set as a cookie in that browser
   and sends it on to the provider. A browser signed in to the console as another member is
   refused: the link was not theirs;
3. ``/oauth/callback`` delivers the provider's answer only to that browser's cookie. Any other
   browser (someone who got hold of the provider's URL) is refused, and the refusal is audited.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from toolcrib.errors import Forbidden, InvalidArguments, NotFound
from toolcrib.gateway.audit.entries import record_admin_act
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Principal
from toolcrib.store import oauth as store
from toolcrib.store.connections import ConnectionRow
from toolcrib.store.oauth import PendingFlow

__all__ = [
    "CALLBACK_PATH",
    "START_PATH",
    "StartOffer",
    "callback_cookie_path",
    "complete_callback",
    "confirm_start",
    "digest",
    "link_for",
    "read_start",
    "start_link",
]

logger = logging.getLogger(__name__)

START_PATH = "/admin/oauth/start/"
"""Under the console, so that the console's session cookie (``Path=/admin``) tells who opened it."""
CALLBACK_PATH = "/oauth/callback"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,100}")
_GONE = "no authorization is waiting for this link: it expired or was used already"


def digest(value: str) -> str:
    """What the store keeps of a start link or a browser's secret: its SHA-256, never the value."""
    return hashlib.sha256(value.encode()).hexdigest()


def _base(gw: Gateway) -> str:
    """Where the start page is served: the host (and path prefix) of the callback, so that the
    cookie set when the link is confirmed comes back with the provider's redirect."""
    callback = gw.settings.upstream_oauth_redirect_uri
    return callback[: -len(CALLBACK_PATH)] if callback.endswith(CALLBACK_PATH) else gw.settings.resource_url


def start_link(gw: Gateway, token: str) -> str:
    return _base(gw) + START_PATH + token


def callback_cookie_path(gw: Gateway) -> str:
    """The path of the browser cookie: the callback's folder (``/oauth``), nothing wider."""
    return urlsplit(gw.settings.upstream_oauth_redirect_uri).path.rpartition("/")[0] or "/"


def link_for(gw: Gateway, row: ConnectionRow, viewer: Principal) -> str | None:
    """The start link of ``row`` for ``viewer``: the live flow of the organization's grant, or of
    their own grant of a per-member connection, when ``viewer`` started it; None for anyone else."""
    if row.auth not in ("oauth", "oauth_member"):
        return None
    token = gw.upstreams.pending_link(row.name, "", viewer.member)
    if token is None and row.auth == "oauth_member":
        token = gw.upstreams.pending_link(row.name, viewer.member, viewer.member)
    return start_link(gw, token) if token is not None else None


@dataclass(frozen=True, slots=True)
class StartOffer:
    """What the start page shows: which connection, at which provider (its host only)."""

    account: str
    provider: str
    url: str  # the provider's authorize URL: for the redirect, never shown on the page


async def _offer(storage: Storage, token: str, signed_in: Principal | None) -> tuple[PendingFlow, StartOffer]:
    if not _TOKEN.fullmatch(token):
        raise NotFound(_GONE)
    pending = await store.pending_by_link(storage.db, digest(token), now=time.time())
    if pending is None or pending.link_used or pending.authorize_url is None:
        raise NotFound(_GONE)
    if signed_in is not None and signed_in.member != pending.starter:
        raise Forbidden(
            "this link was given to another member: only who started an authorization completes it"
        )
    url = storage.box.open(pending.authorize_url)
    parts = urlsplit(url if isinstance(url, str) else "")
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise NotFound(_GONE)
    return pending, StartOffer(pending.account, parts.netloc.rpartition("@")[2], parts.geturl())


async def read_start(storage: Storage, token: str, signed_in: Principal | None) -> StartOffer:
    """The start page of link ``token``; ``signed_in`` is who the browser's console session names
    (None: no session, the link alone is the confirmation). ``not_found`` when the link is unknown,
    used or expired; ``forbidden`` when the session is another member's."""
    return (await _offer(storage, token, signed_in))[1]


async def confirm_start(storage: Storage, token: str, signed_in: Principal | None) -> tuple[str, str]:
    """Confirm link ``token`` in this browser, once: the provider's authorize URL to send it to,
    and the secret its cookie must carry back to the callback (only its hash is kept)."""
    _, offer = await _offer(storage, token, signed_in)
    browser = secrets.token_urlsafe(32)
    if not await store.confirm_link(storage.db, digest(token), digest(browser), now=time.time()):
        raise NotFound(_GONE)  # another browser confirmed it a moment before
    return offer.url, browser


def _sealed_answer(storage: Storage, query: dict[str, str]) -> str:
    """What ``/oauth/callback`` delivers to a flow: the code, state and issuer, or the error."""
    if query.get("error"):
        return storage.box.seal({"error": query["error"]})
    return storage.box.seal({k: query[k] for k in ("code", "state", "iss") if query.get(k)})


def _same_browser(pending: PendingFlow, browser: str | None) -> str | None:
    """The hash of ``browser`` when it is the secret of the browser that confirmed the link."""
    if pending.browser_sha256 is None or not browser or len(browser) > 100:
        return None
    given = digest(browser)
    return given if hmac.compare_digest(pending.browser_sha256, given) else None


async def complete_callback(
    gw: Gateway, query: dict[str, str], browser: str | None
) -> tuple[str, bool | None]:
    """``/oauth/callback``: deliver the authorization server's answer to the flow waiting for its
    ``state`` (single-use, before it expires) when ``browser`` (the secret of its cookie) is the
    browser that confirmed the flow's start link, then wait (bounded) for that flow to end when it
    runs in this process. The account, and whether it is authorized now (None: not known here).

    Any other browser is refused (``forbidden``), nothing is delivered, and the refusal is audited.
    """
    state = query.get("state") or ""
    if not state or len(state) > 128:
        raise InvalidArguments("the callback carries no valid state")
    pending = await store.pending_by_state(gw.store.db, state, now=time.time())
    if pending is None:
        raise NotFound(_GONE)
    given = _same_browser(pending, browser)
    if given is None:
        await _refused(gw, pending)
        raise Forbidden(
            "this authorization was not confirmed in this browser: only who started it completes it"
        )
    sealed = _sealed_answer(gw.store, query)
    account = await store.deliver(gw.store.db, state, sealed, browser_sha256=given, now=time.time())
    if account is None:
        raise NotFound(_GONE)
    ok = await gw.upstreams.authorizer.delivered(state, wait_seconds=4 * gw.settings.connect_timeout_seconds)
    return account, ok


async def _refused(gw: Gateway, pending: PendingFlow) -> None:
    logger.warning(
        "refused an OAuth callback for %s: not from the browser that confirmed its start link",
        pending.account,
    )
    await record_admin_act(
        gw,
        member=pending.starter or "",
        account=pending.account,
        operation="oauth_callback",
        outcome="error",
        error_code=Forbidden.code,
    )
