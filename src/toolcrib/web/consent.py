"""``/auth/consent``: the person's answer to a client's authorization request (R-7.9).

``/authorize`` sends the browser here with the request sealed (``?request=``, ten minutes). The
page needs a signed-in person (else ``/auth/login`` first), names the client, the host it sends
the person back to and the scopes it asks for, which the person may narrow on the R-7.3 ladder.
A role without ``tool:execute`` gets no grant, and a page that says why. "Remember for this
client" skips the page next time for the same scopes or fewer. Each request is answered once:
the sealed request carries a nonce claimed in the store (``single_use``), so a replayed answer,
on any replica, is refused.

The grant is made from the session that consented (R-7.11): its scopes or fewer, ending with it.
Its tokens are for ``/mcp`` (RFC 8707); a client that names the admin API (``resource`` = the
``/api`` URL) gets tokens for ``/api`` only when the person ticks that line, which is never
ticked for them and never skipped by a remembered consent.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from toolcrib.auth.clients import is_loopback
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity.authorization import ConsentRequest, Provider
from toolcrib.policy.gates import EXECUTE, Principal
from toolcrib.policy.roles import has_permission
from toolcrib.web.auth_pages import csrf_refused, page
from toolcrib.web.signin import form_ok, login_url, session_csrf, signed_in

__all__ = ["consent", "consent_page"]

logger = logging.getLogger(__name__)

LADDER = (
    ("mcp:tools", "search and run the organization's connected tools"),
    ("mcp:read", "tools that only read"),
    ("mcp:write", "tools that change things"),
    ("mcp:destructive", "tools that delete or cannot be undone"),
)
_CSP_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9._~%:@/\[\]-]*")
"""A redirect URI that can be named in the CSP header as it is (no spaces, quotes or semicolons)."""
DEFAULT_ASKED = frozenset({"mcp:tools", "mcp:read", "mcp:write"})


def _bad_request(me: Principal | None, message: str, status: int = 400) -> Response:
    return page("refused.html", status=status, me=me, code="invalid_request", message=message)


def _no_execute(me: Principal) -> Response:
    message = (
        f"Your role ({me.role}) may not use tools (it lacks {EXECUTE}), so no client can be given "
        "access as you. Ask an admin for another role."
    )
    return page("refused.html", status=403, me=me, code="permission_required", message=message)


def _asked(request: ConsentRequest, me: Principal) -> frozenset[str]:
    """What the client asks for, within what this sign-in may hand out (its session's scopes)."""
    return (frozenset(request.scopes) if request.scopes else DEFAULT_ASKED) & me.scopes


def _form_target(redirect_uri: str) -> str:
    """The CSP ``form-action`` source of the redirect target (any port on loopback)."""
    if not _CSP_SAFE.fullmatch(redirect_uri.split("?")[0]):
        return ""
    parts = urlsplit(redirect_uri)
    if is_loopback(redirect_uri):
        host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
        return f"http://{host}:*"
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


async def _context(request: Request) -> tuple[Gateway, Provider, Principal | None]:
    return (
        request.app.state.gateway,
        request.app.state.oauth_provider,
        await signed_in(request, request.app.state.gateway),
    )


async def consent_page(request: Request) -> Response:
    gw, provider, me = await _context(request)
    sealed = request.query_params.get("request", "")
    consent = provider.open_request(sealed)
    if consent is None:
        return _bad_request(me, "This authorization request is unknown or expired; start again from the app.")
    if me is None:
        return RedirectResponse(login_url("/auth/consent?" + urlencode({"request": sealed})), 303)
    if not has_permission(me.role, EXECUTE):
        return _no_execute(me)
    client = await provider.get_client(consent.client_id)
    if client is None:
        return _bad_request(me, "The app that asked is not registered here.")
    asked = _asked(consent, me)
    remembered = await provider.remembered_consent(me.member, consent.client_id)
    if not asked:
        return _bad_request(me, "This sign-in may not grant any scope the app asks for.", 403)
    wants_api = consent.wants_api(provider.base_url)
    if remembered is not None and asked <= remembered and not wants_api:
        return await _grant(provider, consent, me, asked)
    return page(
        "consent.html",
        me=me,
        form_targets=_form_target(consent.redirect_uri),
        csrf=session_csrf(request, gw.store),
        request_token=sealed,
        client_name=client.client_name or consent.client_id,
        redirect_host=urlsplit(consent.redirect_uri).netloc or consent.redirect_uri,
        asked=asked,
        wants_api=wants_api,
        ladder=[{"scope": s, "meaning": m} for s, m in LADDER],
    )


async def _grant(
    provider: Provider,
    consent: ConsentRequest,
    me: Principal,
    scopes: frozenset[str],
    *,
    remember: bool = False,
    api: bool = False,
) -> Response:
    """Claim the request (once), remember the choice if asked, issue the code, send the browser back."""
    if not await provider.claim_request(consent):
        logger.warning("consent: a request of %s answered twice (%s)", consent.client_id[:100], me.member)
        return _bad_request(me, "This authorization request was already answered; start again from the app.")
    if remember:
        await provider.remember_consent(me.member, consent.client_id, scopes)
    code_url = await provider.complete(consent, me.member, scopes, parent=me.grant_id, api=api)
    return RedirectResponse(code_url, 302)


async def consent(request: Request) -> Response:
    """POST: the person's answer, with the session's CSRF token, from a page of this gateway."""
    gw, provider, me = await _context(request)
    form = await request.form()
    sealed = form.get("request")
    consent = provider.open_request(sealed) if isinstance(sealed, str) else None
    if me is None:
        again = "/auth/consent?" + urlencode({"request": sealed if isinstance(sealed, str) else ""})
        return RedirectResponse(login_url(again), 303)
    if not form_ok(request, gw, form.get("csrf")):
        return csrf_refused(me)
    if consent is None:
        return _bad_request(me, "This authorization request is unknown or expired; start again from the app.")
    if form.get("decision") != "allow":
        if not await provider.claim_request(consent):
            return _bad_request(me, "This authorization request was already answered.")
        return RedirectResponse(provider.refuse(consent), 302)
    if not has_permission(me.role, EXECUTE):
        return _no_execute(me)
    chosen = frozenset(s for s in form.getlist("scopes") if isinstance(s, str)) & _asked(consent, me)
    if not chosen:
        return _bad_request(me, "Choose at least one scope, or deny.")
    api = form.get("admin_api") == "yes" and consent.wants_api(provider.base_url)
    return await _grant(provider, consent, me, chosen, remember=form.get("remember") == "yes", api=api)
