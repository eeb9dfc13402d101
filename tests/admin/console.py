"""Drive the admin console in-process: one app, one HTTP client (one cookie jar) per member."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import httpx2
from starlette.applications import Starlette

from toolcrib.gateway.core import Gateway
from toolcrib.web.app import create_app

BASE = "http://toolcrib.test"
_HIDDEN = re.compile(r'name="(csrf|nonce)" value="([^"]*)"')


def hidden(html: str, name: str) -> str:
    """The value of hidden field ``name`` (``csrf`` or ``nonce``) in a page."""
    for found, value in _HIDDEN.findall(html):
        if found == name:
            return value
    raise AssertionError(f"no hidden {name} field in the page")


@dataclass
class Console:
    gw: Gateway
    app: Starlette
    _stack: AsyncExitStack
    opened: int = 0  # browsers opened so far

    async def browser(self, base: str = BASE) -> httpx2.AsyncClient:
        """A fresh cookie jar, as a new browser would have, from an address of its own (the
        console's sign-in is limited per client address, R-7.10)."""
        self.opened += 1
        address = (f"10.13.{self.opened // 250}.{self.opened % 250 + 1}", 50000)
        client = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.app, client=address),
            base_url=base,
            timeout=60,
            follow_redirects=False,
        )
        await self._stack.enter_async_context(client)
        return client

    async def signed_in(self, token: str, base: str = BASE) -> tuple[httpx2.AsyncClient, str]:
        """A browser signed in with ``token``, and the CSRF token of its session."""
        http = await self.browser(base)
        await sign_in(http, token)
        page = await http.get("/admin/playground")
        return http, hidden(page.text, "csrf")


async def sign_in(http: httpx2.AsyncClient, token: str) -> httpx2.Response:
    form = await http.get("/admin/login")
    return await http.post("/admin/login", data={"token": token, "nonce": hidden(form.text, "nonce")})


@asynccontextmanager
async def console(gw: Gateway) -> AsyncIterator[Console]:
    app = create_app(gw.settings, gateway=gw)
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        yield Console(gw, app, stack)
