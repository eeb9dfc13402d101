"""``/auth/grants``: "My grants" for every signed-in person (R-7.9), whatever their role.

The same gateway functions as the other faces (``gateway.identity.grants``): the list shows the person's
own grants (client, scopes, created, last used), and each can be revoked with one form post.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from toolcrib.errors import InBandError
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.identity import grants
from toolcrib.web.auth_pages import csrf_refused, page
from toolcrib.web.signin import form_ok, login_url, session_csrf, signed_in

__all__ = ["my_grants", "revoke"]


async def my_grants(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    me = await signed_in(request, gw)
    if me is None:
        return RedirectResponse(login_url("/auth/grants"), 303)
    rows = await grants.list_grants(gw.store, me, me.member)
    notice = "Grant revoked." if request.query_params.get("done") == "revoked" else None
    return page("grants.html", me=me, grants=rows, csrf=session_csrf(request, gw.store), notice=notice)


async def revoke(request: Request) -> Response:
    gw: Gateway = request.app.state.gateway
    me = await signed_in(request, gw)
    if me is None:
        return RedirectResponse(login_url("/auth/grants"), 303)
    form = await request.form()
    if not form_ok(request, gw, form.get("csrf")):
        return csrf_refused(me)
    grant_id = form.get("id")
    try:
        await grants.revoke_grant(gw.store, me, grant_id if isinstance(grant_id, str) else "")
    except InBandError as exc:
        return page(
            "refused.html", status=404, me=me, code=exc.code, message="That grant is not one you may revoke."
        )
    return RedirectResponse("/auth/grants?done=revoked", 303)
