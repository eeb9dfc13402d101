"""The people and clients of the authorization-server tests (R-7.7, R-7.9).

``Person`` is a browser without a script engine: an httpx2 client with a cookie jar that goes
through the gateway's real pages (``/authorize`` → ``/auth/consent`` → ``/auth/login`` → consent
form), posting the forms as a browser would. ``sdk_client`` is the MCP SDK's own
``OAuthClientProvider`` doing discovery, registration, PKCE and refresh against the gateway.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.e2e.inprocess import serve_asgi

REDIRECT = "http://127.0.0.1:9/callback"  # nothing listens: the person never follows it


def hidden(html: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found, f"no hidden field {name!r} in the page"
    return found.group(1).replace("&amp;", "&").replace("&#34;", '"').replace("&#39;", "'")


def refused_page(answer: httpx2.Response) -> str:
    """The error code of an ``/authorize`` refusal shown to the person: a 400 HTML page, never a
    redirect (RFC 9700 §4.11.2); the page's message follows the code (its reason's code inside)."""
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert "location" not in answer.headers
    found = re.search(r'role="alert"><code>([a-z_]+)</code>', answer.text)
    assert found, answer.text
    return found.group(1)


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


@dataclass
class Person:
    """Someone with a personal access token and a browser (a cookie jar)."""

    base: str
    token: str
    scopes: list[str] | None = None  # what to leave ticked on the consent page (None: as asked)
    remember: bool = False
    admin_api: bool = False  # tick the admin API line of the consent page, when it shows one
    decision: str = "allow"
    http: httpx2.AsyncClient = field(default_factory=lambda: httpx2.AsyncClient(timeout=30))
    last_page: str = ""

    async def __aenter__(self) -> Person:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def walk(self, url: str) -> httpx2.Response:
        """Follow the gateway's redirects, signing in when asked; stop at a page or at the client."""
        response = await self.http.get(url)
        for _ in range(10):
            location = response.headers.get("location")
            if response.status_code not in (302, 303) or location is None:
                return response
            target = urljoin(self.base + "/", location)
            if not target.startswith(self.base):
                return response  # back to the client's redirect URI
            if urlsplit(target).path == "/auth/login":
                response = await self.sign_in(target)
                continue
            response = await self.http.get(target)
        raise AssertionError("too many redirects")

    async def sign_in(self, login_url: str) -> httpx2.Response:
        form = await self.http.get(login_url)
        assert form.status_code == 200, form.text
        data = {"token": self.token, "nonce": hidden(form.text, "nonce"), "next": hidden(form.text, "next")}
        return await self.http.post(self.base + "/auth/login", data=data)

    async def answer(self, page: httpx2.Response) -> httpx2.Response:
        """Post the consent form of ``page`` as this person decides."""
        assert page.status_code == 200, page.text
        self.last_page = page.text
        asked = re.findall(r'name="scopes" value="([^"]+)" checked', page.text)
        data: dict[str, Any] = {
            "csrf": hidden(page.text, "csrf"),
            "request": hidden(page.text, "request"),
            "decision": self.decision,
            "scopes": self.scopes if self.scopes is not None else asked,
        }
        if self.remember:
            data["remember"] = "yes"
        if self.admin_api:
            data["admin_api"] = "yes"
        return await self.http.post(self.base + "/auth/consent", data=data)

    async def authorize(self, url: str) -> httpx2.Response:
        """The whole browser step: the answer that sends the person back to the client."""
        response = await self.walk(url)
        if response.status_code == 200:
            response = await self.answer(response)
        return response


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def sdk_provider(
    base: str, person: Person, storage: MemoryStorage, scope: str | None = None
) -> OAuthClientProvider:
    """The SDK's OAuth client, its browser step handed to ``person``."""
    answer: dict[str, str] = {}

    async def redirect(url: str) -> None:
        back = await person.authorize(url)
        assert back.status_code == 302, back.text
        answer.update(query_of(back.headers["location"]))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(REDIRECT)],
        client_name="Test Client",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
    )
    return OAuthClientProvider(base + "/mcp", metadata, storage, redirect, callback)


@asynccontextmanager
async def sdk_client(base: str, auth: httpx2.Auth) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(auth=auth, timeout=60)
    async with http, Client(streamable_http_client(base + "/mcp", http_client=http), cache=None) as client:
        yield client


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


async def register(http: httpx2.AsyncClient, base: str, **metadata: Any) -> dict[str, Any]:
    body = {
        "redirect_uris": [REDIRECT],
        "client_name": "Raw Client",
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    answer = await http.post(base + "/register", json=body)
    assert answer.status_code == 201, answer.text
    registered: dict[str, Any] = answer.json()
    return registered


serve_app = serve_asgi
"""Any ASGI app on a free loopback port (a client's metadata documents, say); its base URL."""


def authorize_url(base: str, client_id: str, challenge: str | None, **params: str) -> str:
    from urllib.parse import urlencode

    query: dict[str, str] = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
    }
    if challenge is not None:
        query.update(code_challenge=challenge, code_challenge_method="S256")
    query.update(params)
    return base + "/authorize?" + urlencode({k: v for k, v in query.items() if v != "-"})
