"""The person who authorizes an upstream OAuth connection, as an HTTP client with a cookie jar.

Given the gateway's start link (R-13.6) they open it, confirm it (the form's double-submit nonce),
are sent to the provider (the fixture approves at once) and back to the gateway's callback.
"""

from __future__ import annotations

import re

import httpx2

__all__ = ["confirm", "follow", "to_callback"]

_NONCE = re.compile(r'name="nonce" value="([^"]+)"')


async def confirm(http: httpx2.AsyncClient, link: str) -> httpx2.Response:
    """Open the start page and confirm it: the answer is the redirect to the provider (303)."""
    page = await http.get(link)
    assert page.status_code == 200, page.text
    found = _NONCE.search(page.text)
    assert found is not None, page.text
    return await http.post(link, data={"nonce": found.group(1)})


async def to_callback(http: httpx2.AsyncClient, link: str) -> str:
    """Confirm ``link`` and let the provider approve: the callback URL it sends the browser to."""
    sent = await confirm(http, link)
    assert sent.status_code == 303, sent.text
    at_provider = await http.get(sent.headers["location"])
    assert at_provider.status_code == 302, at_provider.text
    return at_provider.headers["location"]


async def follow(link: str) -> httpx2.Response:
    """A fresh browser follows ``link`` all the way: the callback's answer."""
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.get(await to_callback(http, link))
