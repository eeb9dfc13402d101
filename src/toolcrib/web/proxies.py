"""Whom to believe about the original request: ``X-Forwarded-Proto`` and ``X-Forwarded-For`` (#21).

A TLS-terminating reverse proxy reaches the gateway over plain HTTP, so the request looks like
``http`` from the proxy's address. The proxy says what it saw in two headers, but anyone can send
those headers: they are believed only from a peer listed in ``trusted_proxies`` (addresses or
CIDR ranges). Then the scheme becomes the forwarded one (the console's cookie is ``Secure`` behind
an https proxy) and the client becomes the right-most ``X-Forwarded-For`` address that is not
itself a trusted proxy (what per-client limits count). From any other peer both headers are
ignored. uvicorn's own proxy-header handling is off (``toolcrib serve``), so this is the one place
that decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ForwardedHeaders", "TrustedProxies"]

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    """The set of proxy addresses whose forwarding headers are believed."""

    def __init__(self, entries: Iterable[str]) -> None:
        self._networks: list[_Network] = [ipaddress.ip_network(e.strip(), strict=False) for e in entries]

    def __bool__(self) -> bool:
        return bool(self._networks)

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            return False  # a name or garbage: never a trusted proxy
        return any(ip.version == net.version and ip in net for net in self._networks)

    def client_of(self, forwarded_for: str) -> str | None:
        """The right-most address of an ``X-Forwarded-For`` chain that is not a trusted proxy.

        Entries to its left were written by whoever sent the request and prove nothing.
        """
        hops = [h.strip().strip("[]") for h in forwarded_for.split(",") if h.strip()]
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop if _is_address(hop) else None  # "unknown" or garbage: keep the peer
        return hops[0] if hops else None


class ForwardedHeaders:
    """ASGI middleware: the forwarded scheme and client, from trusted proxies only."""

    def __init__(self, app: ASGIApp, proxies: TrustedProxies) -> None:
        self._app = app
        self._proxies = proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if scope["type"] in ("http", "websocket") and peer and self._proxies.trusts(str(peer[0])):
            proto = _joined(scope, b"x-forwarded-proto").split(",")[-1].strip().lower()
            if proto in ("http", "https"):
                scope["scheme"] = proto if scope["type"] == "http" else {"http": "ws", "https": "wss"}[proto]
            client = self._proxies.client_of(_joined(scope, b"x-forwarded-for"))
            if client is not None:
                scope["client"] = (client, 0)
        await self._app(scope, receive, send)


def _joined(scope: Scope, name: bytes) -> str:
    """Every value of header ``name``, in order, as one comma-separated list (RFC 9110 5.3)."""
    return ",".join(v.decode("latin-1") for k, v in scope["headers"] if k.lower() == name)


def _is_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
