"""Console single sign-on in a real browser (R-7.8, #22): Chromium goes from ``/admin/login`` through
"Sign in with …" to a real OpenID Provider (npm's oidc-provider on node, on another site:
``localhost`` against the gateway's ``127.0.0.1``), signs in on its pages, and lands on the console
signed in, with the console's usual cookie (HttpOnly, SameSite=Strict, limited to /admin)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import uvicorn

from tests.admin.browser import browser_page, chromium_or_skip
from tests.auth.oidc_provider import CLIENT_ID, CLIENT_SECRET, ROLE_MAP, provider
from tests.conftest import free_port
from tests.e2e.inprocess import open_gateway, owner_token, settings_for
from toolcrib.store import identities
from toolcrib.web.app import create_app

pytestmark = pytest.mark.anyio


async def test_r7_8_console_signs_in_through_the_identity_provider_in_a_browser(tmp_path: Path) -> None:
    chromium_or_skip()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with provider(tmp_path / "idp", base + "/auth/oidc/callback", host="localhost") as idp:
        settings = settings_for(
            tmp_path, port=port, oidc_issuer=idp.issuer, oidc_client_id=CLIENT_ID,
            oidc_client_secret=CLIENT_SECRET, oidc_scopes="openid email groups", oidc_role_map=ROLE_MAP,
            oidc_label="Example SSO",
        )  # fmt: skip
        async with open_gateway(settings) as gw:
            await owner_token(gw)
            server = uvicorn.Server(
                uvicorn.Config(create_app(settings, gateway=gw), port=port, log_level="warning")
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve)
                try:
                    with anyio.fail_after(20):
                        while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                            await anyio.sleep(0.02)
                    async with browser_page(base) as page:
                        await page.goto("/admin/login")
                        await page.click("text=Sign in with Example SSO")
                        await page.wait_for_url("http://localhost:*/interaction/**")
                        await page.fill('input[name="login"]', "ann@example.com")
                        await page.fill('input[name="password"]', "any")
                        await page.click('button[type="submit"]')
                        await page.wait_for_selector('button:has-text("Continue")')
                        await page.click('button:has-text("Continue")')
                        await page.wait_for_url(base + "/admin/connections", timeout=30_000)
                        assert "ann@example.com" in await page.inner_text("header")
                        cookies = {
                            c["name"]: c for c in await page.context.cookies() if c["domain"] == "127.0.0.1"
                        }
                        session = cookies["toolcrib_admin"]
                        assert session["httpOnly"] is True
                        assert session["sameSite"] == "Strict"
                        assert session["path"] == "/admin"
                        assert "toolcrib_oidc" not in cookies  # the flow's own cookie is gone
                finally:
                    server.should_exit = True
            ann = await identities.get_identity(gw.store.db, "ann@example.com")
            assert ann is not None
            assert (ann.role, ann.source) == ("admin", "oidc")
