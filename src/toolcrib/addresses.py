"""Addresses the gateway will not call (R-13.5): one policy for every URL fetched on someone's behalf.

This is a leaf utility beside ``settings`` and ``errors``: it imports only the standard library
and ``toolcrib.errors`` (httpx2/httpcore2 through ``toolcrib.guarded_http``, at the first use of
the guarded transport), so every layer may use it. Both ``upstream`` (URL
connections, their OAuth discovery, registration and token requests) and ``auth`` (the JWKS of
the configured issuer, client ID metadata documents) fetch URLs someone else chose or can
redirect, and both need the same answer to "may the gateway call this?".

Three parts:

- :func:`refusal`, the pure decision on one IP address: link-local (169.254.0.0/16, fe80::/10)
  and the known cloud-metadata addresses always; unspecified, multicast, broadcast and reserved
  always; loopback, RFC 1918, CGNAT (100.64.0.0/10) and ULA (fc00::/7) when private addresses are
  denied too (:meth:`AddressPolicy.for_anonymous` denies them always, loopback excepted only by
  a development setting: R-13.7, the fetches an unauthenticated caller triggers). An IPv6
  address carrying an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``,
  NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) is judged by the IPv4 address it carries.
- :class:`AddressPolicy`: metadata host names refused by name before any resolution, then the
  host resolved and every address checked. Odd IPv4 spellings (``2852039166``, ``0xa9fea9fe``,
  ``0251.0376.0251.0376``, ``169.254.43518``) are not IP literals to :mod:`ipaddress`, but
  ``getaddrinfo`` reads them as the address they mean, so checking the resolved addresses covers
  them: httpx2 hands such hosts to the network as they are (all but the octal one, which its URL
  parser refuses; a connection's URL is checked with ``urlsplit``, which takes it).
- :func:`guarded_transport` / :func:`guarded_client`: an httpx2 transport whose network backend
  resolves the host once per new connection, checks every address, and connects to a checked
  address. A DNS answer that changes between the check and the connect (rebinding) cannot slip
  through, and every connection is checked, those opened after a redirect included. TLS SNI and
  the ``Host`` header stay the name. A refusal raises :class:`AddressRefused` before any socket is
  opened; to httpx2 code it is also an ``httpx2.ConnectError``.
"""

from __future__ import annotations

import importlib
import ipaddress
import socket
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from toolcrib.errors import AddressRefused, ConfigError, shown_host

if TYPE_CHECKING:  # httpx2 and httpcore2 (~0.2 s) load with the first guarded client (#33)
    from toolcrib.guarded_http import GuardedBackend, guarded_client, guarded_transport

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "AddressPolicy",
    "AddressRefused",
    "GuardedBackend",
    "Resolver",
    "guarded_client",
    "guarded_transport",
    "metadata_name",
    "refusal",
    "system_resolve",
]

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Resolves ``(host, port)`` to IP address strings (``getaddrinfo``'s answer); OSError when it cannot."""

METADATA_NAMES = frozenset(
    {
        "metadata",  # GCP's short name (resolv.conf search domain)
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",  # AWS
        "instance-data.ec2.internal",
        "metadata.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",  # Tencent Cloud
        "metadata.packet.net",  # Equinix Metal
        "metadata.platformequinix.com",
    }
)
"""Host names of cloud instance-metadata services, refused by name before any resolution."""

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, ...
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.169.123",  # AWS time sync
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud (inside CGNAT, so named here)
        "168.63.129.16",  # Azure WireServer (a public address, so named here)
        "192.0.0.192",  # Oracle Cloud Classic
        "fd00:ec2::254",  # AWS IMDS over IPv6 (inside ULA, so named here)
        "fd00:ec2::23",  # AWS time sync over IPv6
    )
)
"""Cloud-metadata addresses, refused whatever the private-address setting says."""

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

_ALWAYS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = (
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V4("0.0.0.0/8"), "an unspecified address"),
    (_V6("::/128"), "an unspecified address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V6("ff00::/8"), "a multicast address"),
    (_V4("255.255.255.255/32"), "the broadcast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),
    (_V6("fec0::/10"), "a reserved address"),  # deprecated site-local
)

_PRIVATE: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = (
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V6("::1/128"), "a loopback address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("100.64.0.0/10"), "a shared (CGNAT) address"),
    (_V4("192.0.0.0/24"), "a private address"),  # IETF protocol assignments
    (_V4("198.18.0.0/15"), "a private address"),  # benchmarking networks
    (_V6("fc00::/7"), "a private (unique local) address"),
)

_LOOPBACK = (_V4("127.0.0.0/8"), _V6("::1/128"))
_GLOBAL_UNICAST = _V6("2000::/3")
_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")
_COMPATIBLE = _V6("::/96")
_NAT64 = (_V6("64:ff9b::/96"), _V6("64:ff9b:1::/48"))
_SIX_TO_FOUR = _V6("2002::/16")
_TEREDO = _V6("2001::/32")


def _embedded(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4,
    Teredo's client), or None."""
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _MAPPED or ip in _TRANSLATED or any(ip in net for net in _NAT64):
        return low
    if ip in _COMPATIBLE and int(ip) > 1:  # :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1
        return low
    if ip in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
    if ip in _TEREDO:
        return ipaddress.IPv4Address(~int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IP | str, *, deny_private: bool, allow_loopback: bool = False) -> str | None:
    """Why the gateway will not call ``ip`` (a phrase such as "a link-local address"), or None.

    A string is parsed first (an IPv6 zone, ``%eth0``, is ignored); one that is not an IP address
    is refused as such, so a caller never mistakes garbage for an allowed address.
    ``allow_loopback`` lets loopback through when private addresses are denied (a development
    setting's exception; it changes nothing when they are not).
    """
    if isinstance(ip, str):
        try:
            ip = ipaddress.ip_address(ip.split("%", 1)[0])
        except ValueError:
            return "not an IP address"
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        carried = _embedded(ip)
        if carried is not None:
            why = refusal(carried, deny_private=deny_private, allow_loopback=allow_loopback)
            return f"{why} inside an IPv6 address" if why else None
    for net, why in _ALWAYS:
        if ip in net:
            return why
    if deny_private:
        for net, why in _PRIVATE:
            if ip in net and not (allow_loopback and net in _LOOPBACK):
                return f"{why} (private addresses are denied)"
    outside = isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST
    if outside and not any(ip in net for net, _ in _PRIVATE):  # ::1 and fc00::/7 are not reserved
        return "a reserved address"
    return None


def metadata_name(host: str) -> bool:
    """Whether ``host`` names a cloud metadata service (case, width and a trailing dot ignored)."""
    return _normal(host) in METADATA_NAMES


def _normal(host: str) -> str:
    return unicodedata.normalize("NFKC", host).casefold().strip().strip("[]").rstrip(".")


def _literal(host: str) -> IP | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


async def system_resolve(host: str, port: int) -> list[str]:
    """The addresses ``getaddrinfo`` gives for ``host`` (numeric spellings read as it reads them)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Which hosts the gateway calls: one per process, from ``Settings.deny_private_addresses``.

    ``resolve`` is ``getaddrinfo`` unless a test injects another; ``resolve_seconds`` bounds one
    resolution at create time (a connection's own connect timeout bounds it when connecting).
    """

    deny_private: bool = False
    resolve: Resolver = system_resolve
    resolve_seconds: float = 10.0
    allow_loopback: bool = False
    """With ``deny_private``: loopback is let through all the same (a development setting)."""

    def for_anonymous(self, *, allow_loopback: bool = False) -> AddressPolicy:
        """The policy for fetches an unauthenticated caller can trigger (R-13.7: client ID metadata
        documents): private, loopback and link-local addresses refused whatever
        ``deny_private_addresses`` says, loopback allowed only when ``allow_loopback`` (development).
        The same resolver, so the same connect-time check (:class:`GuardedBackend`) applies."""
        return replace(self, deny_private=True, allow_loopback=allow_loopback)

    async def addresses_for(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, every one of them checked.

        Raises AddressRefused (a metadata name, or any address refused: an answer mixing a public
        address with a refused one is refused whole), or OSError when it does not resolve.
        """
        if metadata_name(host):
            raise _refused(host, "it is a cloud metadata host name")
        literal = _literal(host)
        if literal is not None:
            why = refusal(literal, deny_private=self.deny_private, allow_loopback=self.allow_loopback)
            if why is not None:
                raise _refused(host, f"it is {why}")
            return [str(literal)]
        try:
            answers = await self.resolve(host, port)
        except (UnicodeError, ValueError) as exc:  # not encodable as a DNS name
            raise OSError(f"cannot resolve {shown_host(host)!r}") from exc
        if not answers:
            raise OSError(f"{shown_host(host)!r} has no address")
        for answer in answers:
            why = refusal(answer, deny_private=self.deny_private, allow_loopback=self.allow_loopback)
            if why is not None:
                raise _refused(host, f"it resolves to {why}")
        return [answer.split("%", 1)[0] for answer in answers]

    async def check_url(self, url: str) -> None:
        """Refuse ``url`` (AddressRefused) when its host is one the gateway will not call.

        For creating a connection: a host that does not resolve now is let through (the check at
        connect time stands guard). A string that is not an http(s) URL with a host: ConfigError.
        """
        host, port = _host_port(url)
        try:
            with anyio.fail_after(self.resolve_seconds):
                await self.addresses_for(host, port)
        except (OSError, TimeoutError):
            return


def _refused(host: str, why: str) -> AddressRefused:
    return AddressRefused(shown_host(host), why)


def _host_port(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except (ValueError, TypeError) as exc:
        raise ConfigError("not a URL with a host") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError("not an http(s) URL with a host")
    return host, port or (443 if parts.scheme == "https" else 80)


_GUARDED = frozenset({"GuardedBackend", "guarded_client", "guarded_transport"})


def __getattr__(name: str) -> Any:
    """The guarded transport's names, from ``toolcrib.guarded_http`` at their first use: a process
    that fetches no URL (a one-shot command) never imports httpx2 (#33)."""
    if name not in _GUARDED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("toolcrib.guarded_http"), name)
