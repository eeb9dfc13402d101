"""Which browser ``Origin`` may call the gateway: DNS-rebinding protection with same-origin allowed.

R-2.4 refuses a browser ``Origin`` not allowed; R-2.6 allows, without configuration, the gateway's
own origin: its public URL, or the host it was reached at. "The host it was reached at" comes from
the ``Host`` header, which a DNS-rebinding page controls too (a page at ``http://evil.example:8765``
whose name now resolves to 127.0.0.1 sends ``Origin: http://evil.example:8765`` *and*
``Host: evil.example:8765``). So the Host is believed only when the gateway knows its name: the
public URL's host, the bound interface, and for a loopback (or every-interface) bind ``localhost``,
``127.0.0.1`` and ``[::1]``. The name is what a rebinding page cannot forge (the browser sends its
own); the port is not compared, so a proxy that forwards ``Host: gw.example.org`` over plain HTTP
is still known. The ``Origin`` must then equal the public URL's origin or, port included,
``scheme://Host``. An ``Origin`` listed in ``allowed_origins`` is the operator's own word and
needs no such check.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from toolcrib.settings import Settings

__all__ = ["OriginPolicy"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_LOOPBACK_BINDS = {*_LOOPBACK_NAMES, "0.0.0.0", "::", ""}

Endpoint = tuple[str, str, int]
"""(scheme, host, port), lower-cased, the default port filled in: an origin, comparable."""


def _endpoint(scheme: str, netloc: str) -> Endpoint | None:
    """``netloc`` (``host[:port]``) as reached over ``scheme``; None when it does not parse."""
    if scheme not in _DEFAULT_PORTS or not netloc or any(c in netloc for c in "/?#@ \t"):
        return None
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:  # a port out of range or not a number
        return None
    return (scheme, parts.hostname, port) if parts.hostname else None


def _origin(value: str) -> Endpoint | None:
    parts = urlsplit(value.strip().lower())
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return _endpoint(parts.scheme, parts.netloc)


class OriginPolicy:
    """Decides one request's ``Origin`` against the settings, read once at start-up."""

    def __init__(self, settings: Settings) -> None:
        self._allowed = {o for o in (_origin(v) for v in settings.allowed_origins) if o}
        self._allowed_raw = set(settings.allowed_origins)
        self._public = _origin(settings.resource_url)
        self._hosts: set[str] = set()
        if self._public is not None:
            self._hosts.add(self._public[1])
        bind = settings.host.lower().strip("[]")
        if bind not in ("0.0.0.0", "::", ""):
            self._hosts.add(bind)
        if bind in _LOOPBACK_BINDS:
            self._hosts.update(_LOOPBACK_NAMES)

    def allows(self, origin: str, host: str | None, scheme: str) -> bool:
        """Whether a request with this ``Origin``, reached at ``host`` over ``scheme``, may pass."""
        if origin in self._allowed_raw:
            return True
        claimed = _origin(origin)
        if claimed is None:
            return False
        if claimed in self._allowed:
            return True
        reached = _endpoint(scheme, (host or "").lower())
        if reached is None or reached[1] not in self._hosts:
            return False  # a Host the gateway does not know: the rebinding case
        return claimed in (self._public, reached)
