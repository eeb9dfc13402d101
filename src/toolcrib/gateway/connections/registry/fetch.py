"""One bounded read of a registry (R-13.9, R-13.5), and the cache of what registries answered.

A registry is a URL an owner set, read on an admin's behalf: through the guarded transport and
the gateway's address policy (link-local and metadata addresses never; private ones when the
policy denies them), no redirect followed, at most ``registry_timeout_seconds`` in all and
``registry_max_bytes`` read (a longer answer is refused, not cut). Whatever goes wrong is one
``upstream_error`` naming the registry's host, never the library's own message.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import anyio

from toolcrib.addresses import AddressPolicy
from toolcrib.errors import NotFound, UpstreamError, shown_host
from toolcrib.settings import Settings

__all__ = ["get_json"]


async def get_json(url: str, *, addresses: AddressPolicy, settings: Settings) -> Any:
    """The JSON body of a 200 answer to ``GET url``; NotFound on 404, UpstreamError otherwise."""
    from toolcrib.addresses import guarded_client  # httpx2 only when a registry is read (#33)

    host = shown_host(urlsplit(url).hostname or "?")
    seconds = settings.registry_timeout_seconds
    body = bytearray()
    try:
        with anyio.fail_after(seconds):
            async with (
                guarded_client(addresses, timeout=seconds, follow_redirects=False) as http,
                http.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code == 404:
                    raise NotFound(f"the registry at {host} has no such entry")
                if response.status_code != 200:
                    raise UpstreamError(f"the registry at {host} answered HTTP {response.status_code}")
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > settings.registry_max_bytes:
                        limit = settings.registry_max_bytes
                        raise UpstreamError(f"the registry at {host} answered more than {limit} bytes")
    except (NotFound, UpstreamError):  # AddressRefused too: it names the host and why
        raise
    except TimeoutError as exc:
        raise UpstreamError(f"the registry at {host} did not answer within {seconds:g} s") from exc
    except Exception as exc:  # httpx2's and the network's errors: their text stays in the log
        raise UpstreamError(f"the registry at {host} could not be read") from exc
    try:  # up to registry_max_bytes of JSON: parsed off the event loop
        return await anyio.to_thread.run_sync(json.loads, bytes(body))
    except (ValueError, RecursionError) as exc:
        raise UpstreamError(f"the registry at {host} answered something that is not JSON") from exc
